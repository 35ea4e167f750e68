"""Feeds truncated and byte-mutated copies of an .mlir file to ember-opt and
fails if any run dies from a signal (a crash, an assertion, a stack overflow)
instead of exiting normally with status 0 or 1.

usage: fuzz_ember_opt.py EMBER_OPT INPUT.mlir [COUNT] [SEED]
"""
import concurrent.futures
import os
import random
import subprocess
import sys
import tempfile

CRASH_CODES = {134, 139}  # abort / segfault reported through a shell


def variants(data, count, rng):
    tokens = [b"(", b")", b"[", b"]", b"<", b">", b"{", b"}", b",", b":", b"%", b"x",
              b"-1", b"0", b"99999999999999999999", b"tensor<", b"?", b"\"", b"#", b"@",
              b"dense<", b"f32", b"ui32", b"i1", b"dims = ", b"\x00", b"\xff"]
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:  # truncate
            out.append(data[: rng.randrange(len(data))])
            continue
        buf = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(len(buf))
            if kind == 1:  # flip / replace bytes
                buf[pos] = rng.randrange(256)
            elif kind == 2:  # insert a syntax token
                buf[pos:pos] = rng.choice(tokens)
            else:  # delete a span
                del buf[pos : pos + rng.randint(1, 16)]
        out.append(bytes(buf))
    return out


def run(args):
    ember_opt, path, extra = args
    try:
        p = subprocess.run([ember_opt, path, *extra], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=60)
    except subprocess.TimeoutExpired:
        return path, "timeout", b""
    return path, p.returncode, p.stderr[-2000:]


def main():
    ember_opt, src = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1234
    rng = random.Random(seed)
    data = open(src, "rb").read()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for i, v in enumerate(variants(data, count, rng)):
            path = os.path.join(tmp, f"v{i}.mlir")
            with open(path, "wb") as f:
                f.write(v)
            # Every other variant also goes through the lowering.
            extra = ["-ember-to-linalg"] if i % 2 else []
            jobs.append((ember_opt, path, extra))
        bad = []
        codes = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
            for path, rc, err in ex.map(run, jobs):
                codes[rc] = codes.get(rc, 0) + 1
                if rc == "timeout" or rc < 0 or rc in CRASH_CODES or rc not in (0, 1):
                    bad.append((path, rc, err))
        for path, rc, err in bad:
            print(f"CRASH: {os.path.basename(path)} status {rc}\n{err.decode(errors='replace')}")
            # Keep a copy of the crashing input for debugging.
            keep = os.path.join(os.getcwd(), "fuzz-crash-" + os.path.basename(path))
            try:
                with open(path, "rb") as f, open(keep, "wb") as g:
                    g.write(f.read())
            except OSError:
                pass
        print(f"ran {len(jobs)} variants, exit statuses: "
              + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items(), key=str)))
        if bad:
            print(f"FAILED: {len(bad)} crashing variants")
            sys.exit(1)
        print("no crashes")


if __name__ == "__main__":
    main()
