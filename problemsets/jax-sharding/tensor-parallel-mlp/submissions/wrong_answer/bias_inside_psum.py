# Wrong answer: the output bias is added before the all-reduce, so the psum over 'model'
# counts it once per 'model' device: y = relu(x @ w1 + b1) @ w2 + m * b2. Right only when
# 'model' has one device or b2 is zero.
import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

IN_SPECS = (P("data", None), P(None, "model"), P("model"), P("model", None), P())


def mlp_block(x, w1, b1, w2, b2):
    return jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2 + b2, "model")  # the mistake


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, w1, b1, w2, b2), IN_SPECS)]
    f = jax.shard_map(mlp_block, mesh=mesh, in_specs=IN_SPECS, out_specs=P("data", None))
    return jax.jit(f)(*args)
