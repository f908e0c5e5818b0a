# Wrong answer: the optimizer's updates are computed but never applied. The step returns the
# parameters it was given (optax.apply_updates is missing), so it only looks right when the
# learning rate is 0.
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


def data_parallel_step(seed, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    rep, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data", None))

    graphdef, params = nnx.split(MLP(x.shape[1], y.shape[1], nnx.Rngs(seed)), nnx.Param)
    params = jax.device_put(params, rep)
    tx = optax.sgd(learning_rate)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state, x, y):
        def loss_fn(p):
            return jnp.mean((nnx.merge(graphdef, p)(x) - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return loss, params  # the mistake: should be optax.apply_updates(params, updates)

    loss, new_params = step(params, opt_state, jax.device_put(x, batch), jax.device_put(y, batch))
    return {"loss": loss, "params": new_params}
