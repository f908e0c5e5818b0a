# Wrong answer: optax.adam instead of optax.adamw, so weight_decay is ignored. Adam's
# steps are right; the parameters are never decayed. Right only when weight_decay is 0
# (or the learning rate is).
from functools import partial

import jax
import jax.numpy as jnp
import optax


def loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@partial(jax.jit, static_argnames="steps")
def train(params, x, y, learning_rate, weight_decay, steps):
    tx = optax.adam(learning_rate)

    def step(_, carry):
        params, opt_state = carry
        grads = jax.grad(loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    params = jax.tree.map(jnp.asarray, params)
    params, _ = jax.lax.fori_loop(0, steps, step, (params, tx.init(params)))
    return params
