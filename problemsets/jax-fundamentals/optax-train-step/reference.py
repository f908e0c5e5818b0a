"""Reference: `steps` AdamW steps with optax, as one jitted program.

The optimizer state is created once, before the loop, and carried through
jax.lax.fori_loop together with the parameters; each step takes the gradient of the mean
squared error, asks optax for the updates (AdamW needs the parameters for its weight
decay) and applies them with optax.apply_updates.
"""

from functools import partial

import jax
import jax.numpy as jnp
import optax


def _loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@partial(jax.jit, static_argnames="steps")
def _train(params, x, y, learning_rate, weight_decay, steps):
    # Built inside the jitted function so that the learning rate and the weight decay are
    # traced: other values reuse the compiled program.
    tx = optax.adamw(learning_rate, weight_decay=weight_decay)

    def step(_, carry):
        params, opt_state = carry
        grads = jax.grad(_loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    params, _ = jax.lax.fori_loop(0, steps, step, (params, tx.init(params)))
    return params


def train(params, x, y, learning_rate, weight_decay, steps):
    params = jax.tree.map(jnp.asarray, params)
    return _train(params, x, y, learning_rate, weight_decay, steps)
