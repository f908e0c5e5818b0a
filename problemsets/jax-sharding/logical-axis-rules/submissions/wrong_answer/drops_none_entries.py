# Wrong: drops the dimensions whose name maps to None instead of keeping a None entry, so
# the remaining axes slide onto the wrong dimensions: ("embed", "hidden") with
# embed -> None becomes P("model") (rows split) instead of P(None, "model").
import jax
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

init = nnx.initializers


class FFN(nnx.Module):
    def __init__(self, vocab, embed, hidden, *, rngs):
        self.embed = nnx.Embed(
            vocab, embed,
            embedding_init=nnx.with_partitioning(
                init.variance_scaling(1.0, "fan_in", "normal", out_axis=0), ("vocab", "embed")),
            rngs=rngs,
        )
        self.up = nnx.Linear(
            embed, hidden,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("embed", "hidden")),
            bias_init=nnx.with_partitioning(init.normal(0.02), ("hidden",)),
            rngs=rngs,
        )
        self.down = nnx.Linear(
            hidden, embed,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("hidden", "embed")),
            bias_init=nnx.with_partitioning(init.normal(0.02), ("embed",)),
            rngs=rngs,
        )


def translate(names, rules):
    table = {name: tuple(t) if isinstance(t, list) else t for name, t in rules}
    return P(*[table[n] for n in names if table[n] is not None])


def logical_sharded_state(rules, sizes, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with nnx.use_eager_sharding(False):      # create whole, place afterwards
        model = FFN(*sizes, rngs=nnx.Rngs(0))
    state = nnx.state(model)
    logical = nnx.get_partition_spec(state)  # no rules set: the logical names themselves
    shardings = jax.tree.map(lambda p: NamedSharding(mesh, translate(p, rules)), logical,
                             is_leaf=lambda x: isinstance(x, P))
    return jax.device_put(state, shardings)
