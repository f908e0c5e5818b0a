"""The batch replicated on every device: every device computes the whole gradient."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


class MLP(nnx.Module):
    def __init__(self, in_dim, out_dim, rngs):
        self.hidden = nnx.Linear(in_dim, 16, rngs=rngs)
        self.out = nnx.Linear(16, out_dim, rngs=rngs)


def forward(params, x):
    h = jax.nn.relu(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    return h @ params["out"]["kernel"] + params["out"]["bias"]


def data_parallel_step(seed, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    replicated = NamedSharding(mesh, P())
    model = MLP(x.shape[1], y.shape[1], rngs=nnx.Rngs(seed))
    params = jax.device_put(nnx.state(model, nnx.Param).to_pure_dict(), replicated)
    x, y = jax.device_put(x, replicated), jax.device_put(y, replicated)

    @jax.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((forward(p, x) - y) ** 2))(params)
        return loss, jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)

    loss, params = step(params, x, y)
    return {"loss": loss, "params": params}
