# Runtime error: the mesh comes from jax.make_mesh with its default (Explicit) axis types, and
# the step pins the batch layout with jax.lax.with_sharding_constraint, which in jax 0.10 only
# accepts Auto axes ("use jax.sharding.reshard" for Explicit ones) and raises.
import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


class MLP(nnx.Module):
    def __init__(self, in_dim, out_dim, rngs):
        self.hidden = nnx.Linear(in_dim, 16, rngs=rngs)
        self.out = nnx.Linear(16, out_dim, rngs=rngs)

    def __call__(self, x):
        return self.out(jax.nn.relu(self.hidden(x)))


def data_parallel_step(seed, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names)  # Explicit axes by default
    batch = NamedSharding(mesh, P("data", None))
    model = MLP(x.shape[1], y.shape[1], rngs=nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.sgd(learning_rate), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        x = jax.lax.with_sharding_constraint(x, batch)
        y = jax.lax.with_sharding_constraint(y, batch)
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    with jax.set_mesh(mesh):
        loss = train_step(model, optimizer, x, y)
    return {"loss": loss, "params": nnx.state(model, nnx.Param)}
