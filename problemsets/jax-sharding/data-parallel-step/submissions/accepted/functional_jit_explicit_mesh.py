# Accepted: a functional step. The model is only used to create the parameters; the step is a
# plain jax.jit over a dict of arrays with optax, on a mesh with the default Explicit axes,
# with the output shardings stated explicitly.
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


def forward(params, x):
    h = jax.nn.relu(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    return h @ params["out"]["kernel"] + params["out"]["bias"]


def data_parallel_step(seed, x, y, learning_rate, mesh_shape):
    names = ["data", "model"][: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(int(s) for s in mesh_shape), tuple(names))  # Explicit axes
    rep = NamedSharding(mesh, P())
    batch = NamedSharding(mesh, P("data", None))

    params = nnx.state(MLP(x.shape[1], y.shape[1], nnx.Rngs(seed)), nnx.Param).to_pure_dict()
    params = jax.device_put(params, rep)
    tx = optax.sgd(learning_rate)
    opt_state = jax.device_put(tx.init(params), rep)

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((forward(p, x) - y) ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return loss, optax.apply_updates(params, updates)

    out_shardings = (rep, jax.tree.map(lambda _: rep, params))
    loss, new_params = jax.jit(step, out_shardings=out_shardings)(
        params, opt_state, jax.device_put(x, batch), jax.device_put(y, batch)
    )
    return {"loss": loss, "params": new_params}
