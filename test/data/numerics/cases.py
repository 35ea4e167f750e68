"""What the scripts here share: the module under test (IMPORT=jax or
IMPORT=ember) and `shows(text)`, which prints one case per line: its name,
then each result leaf as `text` writes it, or the type of the error."""
import os

if os.environ["IMPORT"] == "jax":
    import jax
    import jax.numpy as jnp
else:
    import ember as jax
    import ember.numpy as jnp

__all__ = ["jax", "jnp", "shows"]


def shows(text):
    def show(name, f):
        try:
            leaves = jax.tree_util.tree_leaves(f())
            print(name, "->", " | ".join(text(v) for v in leaves))
        except Exception as e:  # noqa: BLE001 (the error's type is the case)
            print(name, "!!", type(e).__name__)
    return show
