# Accepted: AdamW written out by hand (the same maths as optax.adamw: both moments, their
# bias correction, then the decoupled weight decay added to the update and the sum scaled
# by the learning rate) and run with jax.lax.scan over the steps. Right is right: optax is
# the convenient way, not the only one.
from functools import partial

import jax
import jax.numpy as jnp

B1, B2, EPS = 0.9, 0.999, 1e-8


def loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@partial(jax.jit, static_argnums=5)
def train(params, x, y, learning_rate, weight_decay, steps):
    params = jax.tree.map(jnp.asarray, params)
    zeros = jax.tree.map(jnp.zeros_like, params)

    def step(carry, t):
        p, m, v = carry
        g = jax.grad(loss)(p, x, y)
        m = jax.tree.map(lambda m, g: B1 * m + (1 - B1) * g, m, g)
        v = jax.tree.map(lambda v, g: B2 * v + (1 - B2) * g * g, v, g)

        def update(p, m, v):
            m_hat = m / (1 - B1 ** t)
            v_hat = v / (1 - B2 ** t)
            return p - learning_rate * (m_hat / (jnp.sqrt(v_hat) + EPS) + weight_decay * p)

        return (jax.tree.map(update, p, m, v), m, v), None

    ts = jnp.arange(1, steps + 1, dtype=jnp.float32)
    (params, _, _), _ = jax.lax.scan(step, (params, zeros, zeros), ts)
    return params
