# Runtime error: tx.update(grads, opt_state) without the parameters. Adam alone would not
# need them, but AdamW's weight decay does, and optax raises: "You are using a
# transformation that requires the current value of parameters, but you are not passing
# `params` when calling `update`."
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
        updates, opt_state = tx.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    params = jax.tree.map(jnp.asarray, params)
    params, _ = jax.lax.fori_loop(0, steps, step, (params, tx.init(params)))
    return params
