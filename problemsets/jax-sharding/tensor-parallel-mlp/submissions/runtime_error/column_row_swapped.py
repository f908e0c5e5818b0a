# Runtime error: the column- and row-parallel specs are swapped (w1 split by rows, w2 by
# columns). With more than one 'model' device the local blocks no longer fit: x's block has
# in_dim columns but w1's block only in_dim / m rows, and the matmul raises.
import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

IN_SPECS = (P("data", None), P("model", None), P("model"), P(None, "model"), P())  # swapped


def mlp_block(x, w1, b1, w2, b2):
    return jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "model") + b2


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, w1, b1, w2, b2), IN_SPECS)]
    f = jax.shard_map(mlp_block, mesh=mesh, in_specs=IN_SPECS, out_specs=P("data", None))
    return jax.jit(f)(*args)
