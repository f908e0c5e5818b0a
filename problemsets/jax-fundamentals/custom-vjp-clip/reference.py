"""Reference: the identity whose backward pass clips the cotangent, made with
jax.custom_vjp, applied to x @ w inside the loss."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_gradient(z):
    return z


def _forward(z):
    return z, None  # nothing to save for the backward pass


def _backward(_, g):
    # One cotangent per primal input, as a tuple.
    return (jnp.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(_forward, _backward)


def loss(w, x):
    return jnp.sum(clip_gradient(x @ w) ** 2)
