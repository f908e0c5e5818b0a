# Wrong answer: the block is right, but the result is then gathered onto every device
# (out_shardings P()) "so that the caller has all of it". The values match; the layout is
# replicated instead of split over 'data', and every device now holds the whole batch.
import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

IN_SPECS = (P("data", None), P(None, "model"), P("model"), P("model", None), P())


def mlp_block(x, w1, b1, w2, b2):
    return jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "model") + b2


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, w1, b1, w2, b2), IN_SPECS)]
    f = jax.shard_map(mlp_block, mesh=mesh, in_specs=IN_SPECS, out_specs=P("data", None))
    return jax.jit(f, out_shardings=NamedSharding(mesh, P()))(*args)  # the mistake
