# Accepted: a clip_gradient factory with the bounds as nondiff_argnums, the forward saving
# nothing, the backward clipping the incoming cotangent.
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, z):
    return z


def clip_fwd(lo, hi, z):
    return z, None


def clip_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def loss(w, x):
    z = jnp.matmul(x, w)
    return jnp.sum(jnp.square(clip_gradient(-1.0, 1.0, z)))
