# Wrong answer: the optimizer state is created inside the step, so every step is Adam's
# first step again: the moments never accumulate and the bias correction always divides
# by (1 - 0.9) and (1 - 0.999). Right for a single step (and when nothing moves), wrong
# from the second step on.
from functools import partial

import jax
import jax.numpy as jnp
import optax


def loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@partial(jax.jit, static_argnames="steps")
def train(params, x, y, learning_rate, weight_decay, steps):
    tx = optax.adamw(learning_rate, weight_decay=weight_decay)

    def step(_, params):
        grads = jax.grad(loss)(params, x, y)
        updates, _ = tx.update(grads, tx.init(params), params)
        return optax.apply_updates(params, updates)

    return jax.lax.fori_loop(0, steps, step, jax.tree.map(jnp.asarray, params))
