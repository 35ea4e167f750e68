"""Seeds and a dictionary for `ember-opt-fuzz`, the libFuzzer target of #21
(`make fuzz-opt`). Every module of the lit tests (split at `// -----`)
becomes one seed per pipeline that suits it and per Ember pass its file's
RUN lines run: "<index>\\n<module>", where the first line picks what runs
(see tools/ember-opt-fuzz/ember-opt-fuzz.cpp).
The dictionary holds the op names, types and keywords the tests use, so that
libFuzzer's mutations insert whole tokens.

    python tools/fuzz/opt_fuzz_corpus.py --out build/fuzz/seeds --dict build/fuzz/ember.dict
"""
import argparse
import glob
import hashlib
import os
import re

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ember-opt-fuzz",
                      "ember-opt-fuzz.cpp")


def driver_lists():
    """(kPipelines, kPasses) as the driver lists them."""
    text = open(DRIVER).read()

    def strings(name):
        body = text.split(f"const char *const {name}[] = {{", 1)[1].split("};", 1)[0]
        return re.findall(r'"([^"]*)"', body)

    return strings("kPipelines"), strings("kPasses")


# Indices into kPipelines in ember-opt-fuzz.cpp; kPasses' follow.
PARSE, CANON, TRANSFORMS, OPTIMIZE, CPU, CUDA, GPU_KERNEL, TPU_KERNEL = range(8)
PIPELINES, PASSES = driver_lists()


def pipelines_for(path):
    name = os.path.basename(path)
    text = open(path).read()
    named = set(re.findall(r"-(ember-[a-z0-9-]+)", text))
    passes = sorted(len(PIPELINES) + PASSES.index(p) for p in named if p in PASSES)
    if "tpu" in name:
        return [PARSE, CANON, TPU_KERNEL] + passes
    if "ember-gpu" in name:
        return [PARSE, CANON, GPU_KERNEL] + passes
    return [PARSE, CANON, TRANSFORMS, OPTIMIZE, CPU, CUDA] + passes


def modules(path):
    for chunk in open(path).read().split("// -----"):
        lines = [x for x in chunk.splitlines() if not x.strip().startswith("//")]
        text = "\n".join(lines).strip()
        if text:
            yield text + "\n"


TOKEN = re.compile(r'"[a-z_]+\.[a-z_0-9.]+"|\b[a-z_]+\.[a-z_0-9]+\b|![a-z_]+\.[a-z_]+|'
                   r'\b(?:tensor|memref|vector|complex)<|\b[a-z_]+ =')


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dict", required=True)
    ap.add_argument("--tests", default="test")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    seeds, tokens = 0, set()
    for path in sorted(glob.glob(os.path.join(a.tests, "**", "*.mlir"), recursive=True)):
        for text in modules(path):
            tokens.update(TOKEN.findall(text))
            for p in pipelines_for(path):
                data = f"{p}\n{text}".encode()
                name = hashlib.sha1(data).hexdigest()
                with open(os.path.join(a.out, name), "wb") as f:
                    f.write(data)
                seeds += 1
    tokens.update(["f32", "f64", "bf16", "f16", "i1", "i8", "i32", "i64", "index", "?",
                   "0", "1", "-1", "2147483648", "dense<", "func.func", "return",
                   "ember.yield", "%arg0", "%0", "->", "x"])
    with open(a.dict, "w") as f:
        for t in sorted(tokens):
            f.write('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"\n')
    print(f"{seeds} seeds in {a.out}, {len(tokens)} tokens in {a.dict}")


if __name__ == "__main__":
    main()
