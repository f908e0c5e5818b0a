# Accepted: AdamW composed from optax's building blocks (scale_by_adam, then
# add_decayed_weights, then scale_by_learning_rate, exactly what optax.adamw is), a
# separate step function, and a fori_loop over it, all under one jax.jit.
from functools import partial

import jax
import jax.numpy as jnp
import optax


def loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


def make_step(tx, x, y):
    def step(_, state):
        params, opt_state = state
        grads = jax.grad(loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state
    return step


@partial(jax.jit, static_argnames="steps")
def train(params, x, y, learning_rate, weight_decay, steps):
    tx = optax.chain(
        optax.scale_by_adam(b1=0.9, b2=0.999, eps=1e-8),
        optax.add_decayed_weights(weight_decay),
        optax.scale_by_learning_rate(learning_rate),
    )
    params = jax.tree.map(jnp.asarray, params)
    params, _ = jax.lax.fori_loop(0, steps, make_step(tx, x, y), (params, tx.init(params)))
    return params
