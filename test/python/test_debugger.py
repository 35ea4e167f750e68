"""`ember.debug.breakpoint` (JAX's jdb): the debugger stops where the call
is reached, under `jit`, `vmap` and outside any trace, with the run-time
values of the locals of the user's frames; commands read from stdin."""

import os
import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import ember as jax, ember.numpy as jnp

    def f(x):
        y, z = jnp.sin(x), jnp.cos(x)
        jax.debug.breakpoint()
        return y * z

    def outer(x):
        w = x + 1
        return f(w)

    print("jit", jax.jit(outer)(jnp.arange(3.0)))
    print("vmap", jax.vmap(outer)(jnp.arange(2.0)))
    print("eager", outer(jnp.float32(2.0)))
    print("after")
""")


def _run(tmp_path, commands):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    env = dict(os.environ)
    return subprocess.run([sys.executable, str(script)], input="\n".join(commands) + "\n",
                          capture_output=True, text=True, timeout=120, env=env)


def test_breakpoint_shows_runtime_values_in_every_frame(tmp_path):
    out = _run(tmp_path, ["p y", "z * 2", "l", "u", "p w", "w", "d", "c",  # jit
                          "p y.shape", "c", "p float(y)", "c",  # vmap: once per example
                          "pp (float(x), float(y))", "c"])  # eager
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.count("Entering jdb:") == 4
    assert "Array([0.84147096, 0.9092974 , 0.14112   ], dtype=float32)" in text  # sin(1..3)
    assert "Array([ 1.0806046, -0.8322937, -1.979985 ], dtype=float32)" in text  # 2 cos(1..3)
    assert "->     jax.debug.breakpoint()" in text  # `l` marks the line
    assert "Array([1., 2., 3.], dtype=float32)" in text  # `p w` in the caller's frame
    assert "> " + str(tmp_path / "prog.py") + "(11)outer()" in text
    assert "(jdb) ()" in text  # a vmapped example has its own shape
    assert "0.9092974" in text and "(3.0, 0.141" in text
    assert "after" in text


def test_quit_ends_the_call_and_errors_do_not(tmp_path):
    # As JAX's jdb: `q` (or the end of input) raises SystemExit; inside
    # compiled code that reaches the caller as JaxRuntimeError (the program
    # fails there), outside any trace it exits the program.
    out = _run(tmp_path, ["p undefined_name", "1 / 0", "q"])
    assert out.returncode == 1
    assert "NameError: name 'undefined_name' is not defined" in out.stdout
    assert "ZeroDivisionError" in out.stdout
    assert "jit" not in out.stdout.replace("jdb", "")  # ended inside the first call
    assert "JaxRuntimeError: INTERNAL: CpuCallback error calling callback" in out.stderr
    assert out.stderr.rstrip().endswith("SystemExit: 0")
    out = _run(tmp_path, [])  # end of input quits, as in JAX
    assert out.returncode == 1 and "after" not in out.stdout
    out = _run(tmp_path, ["c", "c", "c", "q"])  # quit in the eager call
    assert out.returncode == 0 and "vmap" in out.stdout and "after" not in out.stdout
