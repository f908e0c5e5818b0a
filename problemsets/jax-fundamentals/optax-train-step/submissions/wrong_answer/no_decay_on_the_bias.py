# Wrong answer: weight decay masked to the kernel only (a common choice in training
# scripts, but the task decays every parameter, optax.adamw's default). Right when
# weight_decay is 0, or when the bias is 0 and gets no gradient; wrong otherwise.
from functools import partial

import jax
import jax.numpy as jnp
import optax


def loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@partial(jax.jit, static_argnames="steps")
def train(params, x, y, learning_rate, weight_decay, steps):
    tx = optax.adamw(learning_rate, weight_decay=weight_decay,
                     mask={"w": True, "b": False})

    def step(_, carry):
        params, opt_state = carry
        grads = jax.grad(loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    params = jax.tree.map(jnp.asarray, params)
    params, _ = jax.lax.fori_loop(0, steps, step, (params, tx.init(params)))
    return params
