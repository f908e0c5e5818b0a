# Wrong answer: the right numbers the expensive way. jax.hessian builds the whole n x n
# Hessian (n forward passes over the gradient) and then multiplies it by v: at n = 512,
# 353 times the reference's floating-point operations and 1.1 MiB of temporaries instead
# of 256 bytes (probe no-hessian).
import jax
import jax.numpy as jnp


def hvp(w, x, v):
    def f(w):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    return jax.hessian(f)(w) @ v
