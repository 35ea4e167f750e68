"""`ember.custom_derivatives` as `jax.custom_derivatives`: functions with
user-defined derivative rules."""

from ember._src.ad import custom_jvp as custom_jvp
from ember._src.ad import custom_vjp as custom_vjp
from ember._src.api_extras import closure_convert as closure_convert
from ember._src.api_extras import custom_gradient as custom_gradient
