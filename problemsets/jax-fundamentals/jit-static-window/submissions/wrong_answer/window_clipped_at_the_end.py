# Wrong answer: x padded with window - 1 zeros at the end so that "every position starts a
# window": N outputs, the last window - 1 of them sums of clipped windows that run past
# the end. Right only for window 1.
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, static_argnames="window")
def window_sums(x, window):
    padded = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, window - 1)])
    zero = jnp.zeros_like(padded[..., :1])
    c = jnp.concatenate([zero, jnp.cumsum(padded, axis=-1)], axis=-1)
    return c[..., window:] - c[..., :-window]
