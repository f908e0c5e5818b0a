# Wrong answer: the right numbers and no custom_vjp at all. The loss is right on every test;
# its gradient is not clipped, which only the judge's jax.grad of the function shows.
import jax.numpy as jnp


def loss(w, x):
    return jnp.sum((x @ w) ** 2)
