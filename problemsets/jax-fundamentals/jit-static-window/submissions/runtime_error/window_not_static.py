# Runtime error: @jax.jit without static_argnames, so window is traced like x: a tracer
# has no concrete value, and slicing with it (c[..., window:]) cannot give a shape. The
# first call raises ("Array slice indices must have static start/stop/step").
import jax
import jax.numpy as jnp


@jax.jit
def window_sums(x, window):
    zero = jnp.zeros_like(x[..., :1])
    c = jnp.concatenate([zero, jnp.cumsum(x, axis=-1)], axis=-1)
    return c[..., window:] - c[..., :-window]
