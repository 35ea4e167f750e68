"""`debug.visualize_sharding` and `visualize_array_sharding`: the picture of
which devices hold which block, for 1-D and 2-D shapes, meshes of one and two
axes, replicated and partly replicated specs, `scale`/`min_width`/
`max_width`, and a picture wider than the console. Run with IMPORT=jax (in a
JAX venv with `rich`, which JAX draws with) to record `visualize.jax.txt`
(JAX 0.10.2), with IMPORT=ember to compare (test_parallel.py)."""
import os

if os.environ["IMPORT"] == "jax":
    import jax; jax.config.update("jax_num_cpu_devices", 8)
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P
else:
    import ember as jax; jax.config.update("jax_num_cpu_devices", 8)
    from ember.sharding import NamedSharding
    from ember.sharding import PartitionSpec as P
import numpy as np

mesh = jax.make_mesh((4, 2), ("a", "b"))
line = jax.make_mesh((8,), ("x",))
cases = [
    ((8, 8), mesh, P("a", "b"), {}), ((8, 8), mesh, P("b", "a"), {}),
    ((16,), mesh, P(("a", "b")), {}), ((8, 2), mesh, P("a"), {}),
    ((8, 2), mesh, P(None, "b"), {}), ((3,), mesh, P(), {}),
    ((100, 1), mesh, P("b", None), {}), ((6, 40), mesh, P(None, "b"), {}),
    ((32, 16), line, P("x"), {}), ((16, 32), line, P(None, "x"), {}),
    ((64,), line, P("x"), {}), ((8, 8), mesh, P("a", "b"), {"scale": 2.0}),
    ((8, 8), mesh, P("a"), {"min_width": 20}), ((8, 64), mesh, P("b", "a"), {"max_width": 40}),
]
for shape, m, spec, kw in cases:
    print(shape, spec, kw)
    jax.debug.visualize_sharding(shape, NamedSharding(m, spec), **kw)
x = jax.device_put(np.zeros((8, 4), np.float32), NamedSharding(mesh, P("a", "b")))
jax.debug.visualize_array_sharding(x)
