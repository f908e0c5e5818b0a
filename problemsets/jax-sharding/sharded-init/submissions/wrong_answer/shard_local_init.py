# Wrong: initialises each shard locally inside jax.shard_map with the same seed on every
# device. Nothing is ever whole, but the shards are separate draws (repeated on every
# device, with fan-in from the local shape), not slices of one global init. It only
# matches when the "model" axis has size 1, which no test uses.
from functools import partial

import jax
from flax import nnx
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

init = nnx.initializers


class MLP(nnx.Module):
    def __init__(self, d_in, d_hidden, d_out, *, rngs):
        self.up = nnx.Linear(d_in, d_hidden,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), (None, "model")),
            bias_init=nnx.with_partitioning(init.normal(0.02), ("model",)), rngs=rngs)
        self.down = nnx.Linear(d_hidden, d_out,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("model", None)),
            bias_init=nnx.with_partitioning(init.normal(0.02), (None,)), rngs=rngs)


@partial(jax.jit, static_argnums=(1,))
def _local_init(key, sizes):
    d_in, d_hidden, d_out = sizes
    n_model = jax.sharding.get_abstract_mesh().shape["model"]
    specs = {"up": {"kernel": P(None, "model"), "bias": P("model")},
             "down": {"kernel": P("model", None), "bias": P()}}

    def init_local(k):
        with nnx.use_eager_sharding(False):
            local = MLP(d_in, d_hidden // n_model, d_out, rngs=nnx.Rngs(k))
        return nnx.state(local).to_pure_dict()

    return jax.shard_map(init_local, in_specs=P(), out_specs=specs)(key)


def sharded_init(seed, sizes, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        return _local_init(jax.random.key(seed), tuple(sizes))
