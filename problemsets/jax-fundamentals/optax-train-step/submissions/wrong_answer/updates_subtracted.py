# Wrong answer: the updates are subtracted, params - updates. optax's updates already
# point downhill (they carry the minus sign of -learning_rate), so this climbs the loss.
# Right only when the learning rate is 0.
from functools import partial

import jax
import jax.numpy as jnp
import optax


def loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@partial(jax.jit, static_argnames="steps")
def train(params, x, y, learning_rate, weight_decay, steps):
    tx = optax.adamw(learning_rate, weight_decay=weight_decay)

    def step(_, carry):
        params, opt_state = carry
        grads = jax.grad(loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return jax.tree.map(lambda p, u: p - u, params, updates), opt_state

    params = jax.tree.map(jnp.asarray, params)
    params, _ = jax.lax.fori_loop(0, steps, step, (params, tx.init(params)))
    return params
