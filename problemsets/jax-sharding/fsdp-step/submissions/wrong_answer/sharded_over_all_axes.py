# Wrong answer: the kernels are split over *all* mesh axes, P(mesh.axis_names, None), as in
# "fully sharded over every device". On a 1-D mesh that is the same as P("data", None), but on
# a 2-D mesh the kernels must be split over 'data' only (and copied over 'model').
import jax
import jax.numpy as jnp
import optax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def fsdp_spec(array, mesh):
    # Kernels (2-D) split their first dimension over the devices; the rest is replicated.
    return P(mesh.axis_names, None) if array.ndim == 2 else P()  # the mistake: all axes


def forward(params, x):
    h = jax.nn.relu(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    return h @ params["out"]["kernel"] + params["out"]["bias"]


def train_step(params, opt_state, x, y, learning_rate):
    # The transformation is built inside the step so that the learning rate is a traced
    # argument: tests with other learning rates reuse the compiled step.
    tx = optax.adam(learning_rate)
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((forward(p, x) - y) ** 2))(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return loss, optax.apply_updates(params, updates), opt_state


def fsdp_step(params, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    layout = lambda tree: jax.tree.map(lambda a: NamedSharding(mesh, fsdp_spec(a, mesh)), tree)

    params = jax.device_put(params, layout(params))  # the parameters first, then Adam's
    opt_state = optax.adam(learning_rate).init(params)  # (ScaleByAdamState, EmptyState)
    opt_state = jax.device_put(opt_state, layout(opt_state))  # mu, nu like params; count P()

    batch = NamedSharding(mesh, P("data", None))
    step = jax.jit(train_step,
                   out_shardings=(NamedSharding(mesh, P()), layout(params), layout(opt_state)))
    loss, params, opt_state = step(params, opt_state,
                                   jax.device_put(x, batch), jax.device_put(y, batch),
                                   learning_rate)
    adam = opt_state[0]
    return {"loss": loss, "params": params, "mu": adam.mu, "nu": adam.nu}
