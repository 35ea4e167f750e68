"""`jax.extend.core`: users' primitives (docs/design.md, "Users'
primitives") and the parts of a jaxpr (`make_jaxpr`'s view; design.md,
"make_jaxpr")."""

from ember._src.jaxpr import ClosedJaxpr as ClosedJaxpr
from ember._src.jaxpr import Jaxpr as Jaxpr
from ember._src.jaxpr import JaxprEqn as JaxprEqn
from ember._src.jaxpr import Literal as Literal
from ember._src.jaxpr import Var as Var
from ember._src.jaxpr import jaxpr_as_fun as jaxpr_as_fun
from ember._src.primitive import Primitive as Primitive

__all__ = ["ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive", "Var", "jaxpr_as_fun"]


# `jax.extend.core.primitives`: the primitive objects of the `lax` ops the
# jaxpr view's equations name (registered under its dotted name: this
# module is not a package).
def _primitives_module():
    import sys
    import types

    from ember._src.lax_primitives import NAMES

    mod = types.ModuleType(__name__ + ".primitives",
                           "The primitive objects of jaxpr equations (`add_p`, ...).")
    mod.__dict__.update(NAMES)
    sys.modules[mod.__name__] = mod
    return mod


primitives = _primitives_module()
