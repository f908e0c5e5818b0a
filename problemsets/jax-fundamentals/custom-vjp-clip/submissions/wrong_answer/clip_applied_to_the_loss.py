# Wrong answer: the custom_vjp wraps the whole loss, so it clips the cotangent of the scalar
# loss (always 1.0) and nothing else: the gradient is the unclipped one.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_gradient(z):
    return z


clip_gradient.defvjp(lambda z: (z, None), lambda _, g: (jnp.clip(g, -1.0, 1.0),))


def loss(w, x):
    return clip_gradient(jnp.sum((x @ w) ** 2))
