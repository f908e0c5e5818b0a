# Wrong answer: the mesh is built from a transposed device grid, reshape(model, data).T, so
# consecutive devices run along 'data' instead of 'model'. The values, the spec and the shard
# shapes are right, but device 1 holds the second block of rows instead of the first: on a
# real machine the 'model' all-reduce would cross the slow links. Caught by the placement check.
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

IN_SPECS = (P("data", None), P(None, "model"), P("model"), P("model", None), P())


def mlp_block(x, w1, b1, w2, b2):
    return jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "model") + b2


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    d, m = mesh_shape
    grid = np.array(jax.devices()[: d * m]).reshape(m, d).T  # the mistake
    mesh = Mesh(grid, ("data", "model"))
    args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, w1, b1, w2, b2), IN_SPECS)]
    f = jax.shard_map(mlp_block, mesh=mesh, in_specs=IN_SPECS, out_specs=P("data", None))
    return jax.jit(f)(*args)
