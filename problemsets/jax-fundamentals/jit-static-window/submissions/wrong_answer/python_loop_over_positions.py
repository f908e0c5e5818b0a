# Wrong answer: the right numbers, jitted with window static, but a Python loop sums every
# window separately: N - window + 1 slices of window numbers each, window times the
# work of prefix sums (16,383 floating-point operations against the reference's 4,480 on
# a 256-vector with window 128: probe 'own-jit'), and a program that grows with N.
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, static_argnames="window")
def window_sums(x, window):
    n = x.shape[-1]
    return jnp.stack([x[..., i:i + window].sum(axis=-1) for i in range(n - window + 1)],
                     axis=-1)
