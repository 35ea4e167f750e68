"""`ember.experimental.ode`: JAX's `jax.experimental.ode` (Dormand-Prince
integration with adaptive steps, differentiable by the adjoint method)."""

from ember._src.ode import odeint as odeint

__all__ = ["odeint"]
