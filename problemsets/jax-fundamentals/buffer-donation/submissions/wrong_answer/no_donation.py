# Wrong: the right step and the right numbers, but jitted without donating the parameters:
# the new parameters are allocated beside the old ones, and the compiled program needs a
# whole second copy of them (probe 'donated-step': its total memory is over the bound).
import jax
import jax.numpy as jnp


def _loss(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@jax.jit
def train_step(params, x, y, learning_rate):
    loss, grads = jax.value_and_grad(_loss)(params, x, y)
    return {"loss": loss,
            "params": jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)}
