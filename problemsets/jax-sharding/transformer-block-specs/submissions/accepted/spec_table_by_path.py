# Accepted: no annotations. Builds the plain block abstractly (so no mesh is needed while
# creating it), then maps every parameter's path to its spec from the table by hand and
# returns a nested dict of NamedShardings.
import jax
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


class Block(nnx.Module):
    def __init__(self, d, h, ff, use_bias, rngs):
        self.ln1 = nnx.LayerNorm(d, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(h, d, use_bias=use_bias, decode=False, rngs=rngs)
        self.ln2 = nnx.LayerNorm(d, rngs=rngs)
        self.mlp_up = nnx.Linear(d, ff, use_bias=use_bias, rngs=rngs)
        self.mlp_down = nnx.Linear(ff, d, use_bias=use_bias, rngs=rngs)


def spec_for(path):
    module, name = path[-2], path[-1]
    if module in ("query", "key", "value"):
        return P(None, "model", None) if name == "kernel" else P("model", None)
    if module == "out":
        return P("model", None, None) if name == "kernel" else P()
    if module == "mlp_up":
        return P(None, "model") if name == "kernel" else P("model")
    if module == "mlp_down":
        return P("model", None) if name == "kernel" else P()
    return P()  # ln1, ln2


def transformer_block_shardings(d_model, num_heads, d_ff, use_bias, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    block = nnx.eval_shape(lambda: Block(d_model, num_heads, d_ff, use_bias, nnx.Rngs(0)))
    flat = nnx.state(block, nnx.Param).flat_state()
    out = {}
    for path, _ in flat:
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = NamedSharding(mesh, spec_for(path))
    return out
