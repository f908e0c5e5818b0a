# Wrong answer: jax.jvp returns (primal output, tangent output), and this keeps the first:
# the gradient of f at w, not H(w) @ v. Right only where the gradient happens to equal
# the product.
import jax
import jax.numpy as jnp


def hvp(w, x, v):
    def f(w):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    hv, _ = jax.jvp(jax.grad(f), (w,), (v,))
    return hv
