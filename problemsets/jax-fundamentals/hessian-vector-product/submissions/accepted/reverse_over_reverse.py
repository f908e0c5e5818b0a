# Accepted: reverse-over-reverse. The gradient of the scalar <grad f(w), v> with respect to
# w is H(w) @ v (the Hessian is symmetric); no n x n matrix is built either, and XLA
# compiles it to the same work as forward-over-reverse here.
import jax
import jax.numpy as jnp


def f(w, x):
    return jnp.sum(jnp.square(jnp.tanh(jnp.dot(x, w))))


def hvp(w, x, v):
    grad_f = jax.grad(f)
    return jax.grad(lambda w: jnp.vdot(grad_f(w, x), v))(w)
