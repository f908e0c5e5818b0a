# Wrong answer: a hand-written shard_map step that never averages over 'data'. Each device
# uses the loss and gradients of its own slice of the batch; check_vma=False silences JAX's
# warning, and the returned "replicated" values are really device 0's local ones. Right only
# when the 'data' axis has a single device.
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


class MLP(nnx.Module):
    def __init__(self, in_dim, out_dim, rngs):
        self.hidden = nnx.Linear(in_dim, 16, rngs=rngs)
        self.out = nnx.Linear(16, out_dim, rngs=rngs)

    def __call__(self, x):
        return self.out(jax.nn.relu(self.hidden(x)))


def data_parallel_step(seed, x, y, learning_rate, mesh_shape):
    shape = tuple(mesh_shape)
    names = ("data", "model")[: len(shape)]
    mesh = Mesh(np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape), names)
    graphdef, params = nnx.split(MLP(x.shape[1], y.shape[1], nnx.Rngs(seed)), nnx.Param)

    def local_step(params, x, y):
        loss, grads = jax.value_and_grad(
            lambda p: jnp.mean((nnx.merge(graphdef, p)(x) - y) ** 2)
        )(params)
        # the mistake: no jax.lax.pmean(loss / grads, "data")
        return loss, jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)

    step = jax.jit(jax.shard_map(local_step, mesh=mesh, check_vma=False,
                                 in_specs=(P(), P("data", None), P("data", None)),
                                 out_specs=(P(), P())))
    loss, new_params = step(params, x, y)
    return {"loss": loss, "params": new_params}
