# Wrong answer: the parameters get the batch's layout. Every parameter is split on its first
# dimension over 'data' (P('data')), so they are no longer replicated: the values are right
# but the returned arrays are sharded, not P() copies.
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

    def __call__(self, x):
        return self.out(jax.nn.relu(self.hidden(x)))


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss


def data_parallel_step(seed, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    sharded = NamedSharding(mesh, P("data"))  # the mistake: the same spec as the batch

    model = MLP(x.shape[1], y.shape[1], rngs=nnx.Rngs(seed))
    nnx.update(model, jax.device_put(nnx.state(model), sharded))
    optimizer = nnx.Optimizer(model, optax.sgd(learning_rate), wrt=nnx.Param)
    batch = NamedSharding(mesh, P("data", None))
    loss = train_step(model, optimizer, jax.device_put(x, batch), jax.device_put(y, batch))
    params = jax.device_put(nnx.state(model, nnx.Param), sharded)
    return {"loss": loss, "params": params}
