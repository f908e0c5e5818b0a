# Wrong answer: no all-reduce at all. Each device returns the partial sum of its own hidden
# units; with check_vma=False JAX does not object, and the "replicated" output is really the
# partial result of the first device along 'model'. Right only when 'model' has one device.
import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

IN_SPECS = (P("data", None), P(None, "model"), P("model"), P("model", None), P())


def mlp_block(x, w1, b1, w2, b2):
    return jax.nn.relu(x @ w1 + b1) @ w2 + b2  # the mistake: no psum over 'model'


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, w1, b1, w2, b2), IN_SPECS)]
    f = jax.shard_map(mlp_block, mesh=mesh, in_specs=IN_SPECS, out_specs=P("data", None),
                      check_vma=False)
    return jax.jit(f)(*args)
