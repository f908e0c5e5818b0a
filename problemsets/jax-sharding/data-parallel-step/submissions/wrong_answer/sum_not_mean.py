# Wrong answer: the loss sums the squared errors instead of averaging them. The loss and the
# gradients are N * out_dim times too large, so the SGD step is too; it only matches when the
# batch holds a single number.
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
    loss, grads = nnx.value_and_grad(lambda m: jnp.sum((m(x) - y) ** 2))(model)  # the mistake
    optimizer.update(model, grads)
    return loss


def data_parallel_step(seed, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    model = MLP(x.shape[1], y.shape[1], rngs=nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.sgd(learning_rate), wrt=nnx.Param)
    state = nnx.state((model, optimizer))
    nnx.update((model, optimizer), jax.device_put(state, NamedSharding(mesh, P())))
    batch = NamedSharding(mesh, P("data", None))
    loss = train_step(model, optimizer, jax.device_put(x, batch), jax.device_put(y, batch))
    return {"loss": loss, "params": nnx.state(model, nnx.Param)}
