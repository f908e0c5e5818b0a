# Accepted: the stateful nnx version: the parameters put into an nnx MLP, nnx.Optimizer and
# nnx.jit on an Auto mesh, with the layout pinned by jax.lax.with_sharding_constraint at the
# end of the step.
"""One FSDP Adam step with nnx.jit on an Auto mesh.

Kernels are split on their first dimension over 'data', biases and Adam's step count are
replicated, and Adam's moments follow their parameters (nnx.Optimizer's state is placed
with the same rule). The constraint at the end of the step pins the new state to the layout.
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


class MLP(nnx.Module):
    def __init__(self, in_dim, hidden, out_dim, rngs):
        self.hidden = nnx.Linear(in_dim, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, out_dim, rngs=rngs)

    def __call__(self, x):
        return self.out(jax.nn.relu(self.hidden(x)))


def fsdp_spec(array):
    # Kernels (2-D) split their first dimension over 'data'; everything else is replicated.
    return P("data", None) if array.ndim == 2 else P()


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    state = nnx.state((model, optimizer))
    nnx.update((model, optimizer),
               jax.lax.with_sharding_constraint(state, jax.tree.map(fsdp_spec, state)))
    return loss


def fsdp_step(params, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))

    # An abstract model (no arrays made) of the right shapes, then the given parameters.
    in_dim, hidden = params["hidden"]["kernel"].shape
    out_dim = params["out"]["kernel"].shape[1]
    model = nnx.eval_shape(lambda: MLP(in_dim, hidden, out_dim, rngs=nnx.Rngs(0)))
    state = nnx.state(model, nnx.Param)
    nnx.replace_by_pure_dict(state, params)
    nnx.update(model, state)

    optimizer = nnx.Optimizer(model, optax.adam(learning_rate), wrt=nnx.Param)
    state = nnx.state((model, optimizer))
    shardings = jax.tree.map(lambda a: NamedSharding(mesh, fsdp_spec(a)), state)
    nnx.update((model, optimizer), jax.device_put(state, shardings))

    batch = NamedSharding(mesh, P("data", None))
    with jax.set_mesh(mesh):  # with_sharding_constraint's bare PartitionSpecs need a mesh
        loss = train_step(model, optimizer, jax.device_put(x, batch), jax.device_put(y, batch))

    adam = optimizer.opt_state[0]  # optax.adam = chain(scale_by_adam, scale_by_lr)
    return {
        "loss": loss,
        "params": nnx.state(model, nnx.Param),
        "mu": adam.mu,
        "nu": adam.nu,
    }
