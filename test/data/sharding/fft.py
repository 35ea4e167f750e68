"""FFTs of explicitly sharded arrays keep the operand's sharding in their
type (JAX keeps the spec, also on a transformed dimension whose size
changes). Run with IMPORT=jax to record `fft.jax.txt` (JAX 0.10.2), with
IMPORT=ember to compare (test_parallel.py)."""
import os

if os.environ["IMPORT"] == "jax":
    import jax; jax.config.update("jax_num_cpu_devices", 8)
    import jax.numpy as jnp
    from jax.sharding import AxisType
    from jax.sharding import PartitionSpec as P
else:
    import ember as jax; jax.config.update("jax_num_cpu_devices", 8)
    import ember.numpy as jnp
    from ember.sharding import AxisType
    from ember.sharding import PartitionSpec as P
import numpy as np

mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
with jax.set_mesh(mesh):
    real = np.arange(8 * 16, dtype=np.float32).reshape(8, 16) / 7
    for spec in [P("x", None), P("x", "y"), P(("x", "y"), None)]:
        x = jax.device_put(real, spec)
        c = x.astype(jnp.complex64)
        for name, f, arg in [("fft", jnp.fft.fft, c), ("ifft", jnp.fft.ifft, c),
                             ("rfft", jnp.fft.rfft, x), ("irfft", jnp.fft.irfft, c),
                             ("fft2", jnp.fft.fft2, c), ("rfftn", jnp.fft.rfftn, x),
                             ("fft axis 0", lambda a: jnp.fft.fft(a, axis=0), c)]:
            try:
                y = jax.jit(f)(arg)
                total = round(float(np.asarray(y).real.sum()), 3) + 0.0
                print(f"{name} {spec} -> {jax.typeof(y)} {total:.3f}")
            except Exception as e:
                print(f"{name} {spec} -> {type(e).__name__}: {str(e).splitlines()[0][:80]}")
