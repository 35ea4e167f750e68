"""`jax.ad_checkpoint`: the policies of `jax.checkpoint`, `checkpoint_name` and
`print_saved_residuals`."""

from ember._src.ad_checkpoint import Offloadable as Offloadable
from ember._src.ad_checkpoint import Recompute as Recompute
from ember._src.ad_checkpoint import Saveable as Saveable
from ember._src.ad_checkpoint import checkpoint_name as checkpoint_name
from ember._src.ad_checkpoint import checkpoint_policies as checkpoint_policies
from ember._src.ad_checkpoint import print_saved_residuals as print_saved_residuals

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint_name", "checkpoint_policies",
           "print_saved_residuals"]
