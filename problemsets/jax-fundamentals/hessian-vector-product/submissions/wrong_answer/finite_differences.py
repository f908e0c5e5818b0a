# Wrong answer: a central finite difference of the gradient along v. It approximates
# H(w) @ v, with an error from the step (the curvature changing) and from float32 rounding
# (two nearly equal gradients subtracted): close where f is nearly quadratic, off beyond
# the tolerance elsewhere.
import jax
import jax.numpy as jnp


def hvp(w, x, v):
    def f(w):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    eps = 1e-3
    g = jax.grad(f)
    return (g(w + eps * v) - g(w - eps * v)) / (2 * eps)
