# Accepted: the stateful nnx version. nnx.Optimizer and nnx.jit on an Auto mesh; the model
# and optimizer state are replicated with one device_put, and the compiler inserts the
# all-reduce of the gradients.
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


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)  # the mean over the *global* batch

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def data_parallel_step(seed, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))

    model = MLP(x.shape[1], y.shape[1], rngs=nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.sgd(learning_rate), wrt=nnx.Param)

    # Replicate the model and the optimizer state on every device of the mesh ...
    state = nnx.state((model, optimizer))
    nnx.update((model, optimizer), jax.device_put(state, NamedSharding(mesh, P())))
    # ... and give each 'data' row of devices its slice of the batch.
    batch = NamedSharding(mesh, P("data", None))
    x, y = jax.device_put(x, batch), jax.device_put(y, batch)

    loss = train_step(model, optimizer, x, y)
    return {"loss": loss, "params": nnx.state(model, nnx.Param)}
