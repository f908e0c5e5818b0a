# Wrong answer: a checkpoint policy that saves every matmul's result (dots_saveable) keeps
# the (N, H) product of each layer for the backward pass: 1.5 to 1.8 times the reference's
# temporary memory, for recomputing only the tanh.
import jax
import jax.numpy as jnp


def deep_loss(ws, x):
    step = jax.checkpoint(lambda h, w: (jnp.tanh(h @ w), None),
                          policy=jax.checkpoint_policies.dots_saveable)
    h, _ = jax.lax.scan(step, x, ws)
    return jnp.sum(h ** 2)
