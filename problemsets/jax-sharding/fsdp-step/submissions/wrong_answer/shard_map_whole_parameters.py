# Wrong answer: data parallelism written with jax.shard_map, the whole parameters on every
# device (in_specs P()), the loss pmean-ed over 'data', Adam run on the whole model on
# every device, and the new parameters and moments then placed in the FSDP layout. The
# numbers and the result's layout are right; the compiled program holds the whole model on
# each device and needs about 1.5 times the reference's temporary memory per device (probe
# one-program).
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def forward(params, x):
    h = jax.nn.relu(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    return h @ params["out"]["kernel"] + params["out"]["bias"]


def fsdp_step(params, x, y, learning_rate, mesh_shape):
    shape = tuple(int(s) for s in mesh_shape)
    names = ("data", "model")[: len(shape)]
    mesh = Mesh(np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape), names)
    tx = optax.adam(learning_rate)

    def local_step(params, x, y):
        # The loss averaged over 'data'; its gradient with respect to the replicated
        # parameters is summed over the devices by shard_map's transpose: the full gradient.
        loss, grads = jax.value_and_grad(
            lambda p: jax.lax.pmean(jnp.mean((forward(p, x) - y) ** 2), "data"))(params)
        updates, opt_state = tx.update(grads, tx.init(params), params)
        return loss, optax.apply_updates(params, updates), opt_state[0].mu, opt_state[0].nu

    step = jax.jit(jax.shard_map(local_step, mesh=mesh,
                                 in_specs=(P(), P("data", None), P("data", None)),
                                 out_specs=P()))
    loss, new, mu, nu = step(params, x, y)
    # "FSDP": the layout the problem asks for, applied to the results.
    fsdp = lambda a: NamedSharding(mesh, P("data", None) if a.ndim == 2 else P())
    place = lambda tree: jax.device_put(tree, jax.tree.map(fsdp, tree))
    return {"loss": loss, "params": place(new), "mu": place(mu), "nu": place(nu)}
