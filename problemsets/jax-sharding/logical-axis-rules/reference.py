"""Reference: create the model inside nnx.jit under the mesh and the logical axis rules,
so Flax translates every logical annotation into mesh axes and each parameter is made in
its layout (none is ever whole on one device). The rules are set inside the traced
function and passed as a static argument: new rules mean a new trace, not a stale cached
layout (see submissions/wrong_answer/stale_jit_cache.py)."""

from functools import partial

import jax
from flax import nnx
from jax.sharding import AxisType

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


def _as_rules(rules):
    # JSON gives lists: make each pair a tuple and a list of mesh axes a tuple of axes.
    return tuple((name, tuple(axes) if isinstance(axes, list) else axes) for name, axes in rules)


# The rules are read while tracing, so they must be part of the cache key: static, like sizes.
@partial(nnx.jit, static_argnums=(0, 1))
def _create(sizes, rules):
    with nnx.logical_axis_rules(rules):
        return FFN(*sizes, rngs=nnx.Rngs(0))


def logical_sharded_state(rules, sizes, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        model = _create(tuple(sizes), _as_rules(rules))
    return nnx.state(model)
