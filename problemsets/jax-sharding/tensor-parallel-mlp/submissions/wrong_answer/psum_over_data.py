# Wrong answer: the all-reduce runs over the wrong mesh axis. psum over 'data' adds up the
# outputs of different examples, and the partial sums over 'model' are never completed;
# check_vma=False hides JAX's complaint that the result still varies over 'model'.
import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

IN_SPECS = (P("data", None), P(None, "model"), P("model"), P("model", None), P())


def mlp_block(x, w1, b1, w2, b2):
    return jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "data") + b2  # the mistake: 'data'


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, w1, b1, w2, b2), IN_SPECS)]
    f = jax.shard_map(mlp_block, mesh=mesh, in_specs=IN_SPECS, out_specs=P("data", None),
                      check_vma=False)
    return jax.jit(f)(*args)
