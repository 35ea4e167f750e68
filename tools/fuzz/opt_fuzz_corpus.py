"""Seeds and a dictionary for `ember-opt-fuzz`, the libFuzzer target of #21
(`make fuzz-opt`). Every module of the lit tests (split at `// -----`)
becomes one seed per pipeline that suits it: "<index>\\n<module>", where the
first line picks the pipeline (see tools/ember-opt-fuzz/ember-opt-fuzz.cpp).
The dictionary holds the op names, types and keywords the tests use, so that
libFuzzer's mutations insert whole tokens.

    python tools/fuzz/opt_fuzz_corpus.py --out build/fuzz/seeds --dict build/fuzz/ember.dict
"""
import argparse
import glob
import hashlib
import os
import re

# Indices into kPipelines in ember-opt-fuzz.cpp.
PARSE, CANON, TRANSFORMS, OPTIMIZE, CPU, CUDA, GPU_KERNEL, TPU_KERNEL = range(8)


def pipelines_for(path):
    name = os.path.basename(path)
    if "tpu" in name:
        return [PARSE, CANON, TPU_KERNEL]
    if "ember-gpu" in name:
        return [PARSE, CANON, GPU_KERNEL]
    return [PARSE, CANON, TRANSFORMS, OPTIMIZE, CPU, CUDA]


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
