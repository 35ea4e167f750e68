"""An allocation that cannot be satisfied raises MemoryError, never a crash
(#21): compiled code's temporaries (its malloc fails: the call is abandoned
through the runtime's guard), a call's outputs, and eager results; the
process goes on working afterwards. Run in a child process, so that a
regression crashes the child, not the test run."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import numpy as np
    import ember, ember.numpy as jnp
    x = jnp.ones((1 << 20,), jnp.float32)
    huge = (1 << 20, 1 << 23)  # 32 TiB of float32
    tries = {
        "temporary": lambda: ember.jit(
            lambda x: jnp.sum(jnp.broadcast_to(x[:, None], huge) * 2.0))(x),
        "output": lambda: ember.jit(lambda x: jnp.broadcast_to(x[:, None], huge))(x),
        "eager": lambda: jnp.zeros(huge, jnp.float32) + 1.0,
        "grad": lambda: ember.grad(
            lambda x: jnp.sum(jnp.tanh(jnp.broadcast_to(x[:, None], huge))))(x),
    }
    for name, f in tries.items():
        try:
            f()
        except MemoryError as e:
            print(name, "MemoryError", "bytes" in str(e) or "allocate" in str(e))
        else:
            print(name, "no error")
    # Still working: a large call on the pool's threads and a small one.
    y = np.arange(1 << 20, dtype=np.float32)
    print(float(ember.jit(lambda v: jnp.sum(jnp.tanh(v) * 0 + v))(y)) == float(y.sum()))
""")


def test_failed_allocations_raise_memory_error():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.split("\n")
    for name in ("temporary", "output", "eager", "grad"):
        assert f"{name} MemoryError True" in lines, out.stdout
    assert lines[4] == "True", out.stdout


DEVICES_SCRIPT = textwrap.dedent("""
    import os
    os.environ["EMBER_NUM_CPU_DEVICES"] = "4"
    import ember, ember.numpy as jnp
    from ember._src import spmd
    from ember.sharding import NamedSharding, PartitionSpec as P
    x = jnp.ones((1 << 20,), jnp.float32)
    huge = (1 << 20, 1 << 23)
    xs = ember.device_put(x, NamedSharding(ember.make_mesh((4,), ("i",)), P("i")))
    try:
        ember.jit(lambda x: jnp.sum(jnp.broadcast_to(x[:, None], huge) * 2.0))(xs)
    except MemoryError as e:
        print("MemoryError", "allocate" in str(e))
    print(float(ember.jit(lambda v: jnp.sum(jnp.tanh(v) * 0 + v))(xs)))
    print(dict(spmd.compiled))
""")


def test_failed_allocation_on_device_threads_raises_memory_error():
    """A program partitioned over 4 in-process devices whose temporaries
    cannot be allocated on the devices' threads: MemoryError, and the next
    partitioned call works."""
    out = subprocess.run([sys.executable, "-c", DEVICES_SCRIPT], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split("\n")[:3] == ["MemoryError True", "1048576.0", "{'spmd': 2}"], \
        out.stdout
