# Wrong answer: reverse-over-reverse that differentiates the sum of the gradient instead of
# its dot product with v, which gives H(w) @ ones: right only when v is all ones.
import jax
import jax.numpy as jnp


def hvp(w, x, v):
    def f(w):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    return jax.grad(lambda w: jnp.sum(jax.grad(f)(w)))(w)
