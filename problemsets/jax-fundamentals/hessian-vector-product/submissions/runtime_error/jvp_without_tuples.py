# Runtime error: jax.jvp takes its primals and tangents as tuples, (w,) and (v,); passing
# the arrays themselves raises a TypeError ("primal and tangent arguments to jax.jvp must
# be tuples or lists").
import jax
import jax.numpy as jnp


def hvp(w, x, v):
    def f(w):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    _, hv = jax.jvp(jax.grad(f), w, v)
    return hv
