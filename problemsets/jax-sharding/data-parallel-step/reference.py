"""Reference: one data-parallel SGD step as a functional jax.jit on an Auto mesh.

The batch is split over 'data', the parameters are replicated; the compiler inserts the
all-reduce that turns the per-device partial gradients into the gradient of the mean over
the global batch. out_shardings keep the loss and the new parameters replicated.
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

HIDDEN = 16


class MLP(nnx.Module):
    def __init__(self, in_dim, out_dim, rngs):
        self.hidden = nnx.Linear(in_dim, HIDDEN, rngs=rngs)
        self.out = nnx.Linear(HIDDEN, out_dim, rngs=rngs)

    def __call__(self, x):
        return self.out(jax.nn.relu(self.hidden(x)))


def forward(params, x):
    h = jax.nn.relu(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    return h @ params["out"]["kernel"] + params["out"]["bias"]


def train_step(params, x, y, learning_rate):
    # The transformation is built inside the step so that the learning rate is a traced
    # argument: tests with other learning rates reuse the compiled step.
    tx = optax.sgd(learning_rate)
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((forward(p, x) - y) ** 2))(params)
    updates, _ = tx.update(grads, tx.init(params), params)
    return loss, optax.apply_updates(params, updates)


def data_parallel_step(seed, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    replicated = NamedSharding(mesh, P())
    batch = NamedSharding(mesh, P("data", None))

    model = MLP(x.shape[1], y.shape[1], rngs=nnx.Rngs(seed))
    params = jax.device_put(nnx.state(model, nnx.Param).to_pure_dict(), replicated)

    # A single sharding stands for every leaf of the (loss, params) output tree.
    step = jax.jit(train_step, out_shardings=replicated)
    loss, params = step(params, jax.device_put(x, batch), jax.device_put(y, batch),
                        learning_rate)
    return {"loss": loss, "params": params}
