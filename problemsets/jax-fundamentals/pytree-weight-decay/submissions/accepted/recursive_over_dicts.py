# Accepted: no tree utilities, a recursion over the nested dicts that carries each leaf's
# own key down with it; the same update, leaf by leaf, with jax.numpy.
import jax.numpy as jnp


def _step(p, g, key, lr, decay):
    if isinstance(p, dict):
        return {k: _step(p[k], g[k], k, lr, decay) for k in p}
    p, g = jnp.asarray(p), jnp.asarray(g)
    if key == "kernel":
        return p - lr * (g + decay * p)
    return p - lr * g


def sgd_step(params, grads, lr, decay):
    return _step(params, grads, None, lr, decay)
