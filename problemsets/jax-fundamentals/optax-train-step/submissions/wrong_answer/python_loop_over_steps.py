# Wrong answer: the right AdamW steps, run by a Python for loop around a jitted step. The
# numbers are right, but the judge's jax.jit of train unrolls the loop into one copy of
# the step per iteration: the compiled program has no loop (no while operation), and a
# real run would compile a program that grows with the number of steps.
import jax
import jax.numpy as jnp
import optax


def loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@jax.jit
def step(params, opt_state, x, y, learning_rate, weight_decay):
    tx = optax.adamw(learning_rate, weight_decay=weight_decay)
    grads = jax.grad(loss)(params, x, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def train(params, x, y, learning_rate, weight_decay, steps):
    params = jax.tree.map(jnp.asarray, params)
    opt_state = optax.adamw(learning_rate, weight_decay=weight_decay).init(params)
    for _ in range(steps):
        params, opt_state = step(params, opt_state, x, y, learning_rate, weight_decay)
    return params
