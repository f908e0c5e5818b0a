# Accepted: annotates with *logical* axis names ("embed", "heads", "mlp", ...) and maps them
# to mesh axes with nnx.logical_axis_rules; the mesh is built with Mesh (Auto axes) and the
# NamedShardings are made by hand from nnx.get_partition_spec.
import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh, NamedSharding

init, wp = nnx.initializers, nnx.with_partitioning
RULES = (("embed", None), ("heads", "model"), ("head_dim", None), ("mlp", "model"))


class Block(nnx.Module):
    def __init__(self, d, h, ff, use_bias, rngs):
        self.ln1 = nnx.LayerNorm(d, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(
            h, d, use_bias=use_bias, decode=False,
            kernel_init=wp(init.lecun_normal(), ("embed", "heads", "head_dim")),
            bias_init=wp(init.zeros_init(), ("heads", "head_dim")),
            out_kernel_init=wp(init.lecun_normal(), ("heads", "head_dim", "embed")),
            out_bias_init=wp(init.zeros_init(), ("embed",)),
            rngs=rngs)
        self.ln2 = nnx.LayerNorm(d, rngs=rngs)
        self.mlp_up = nnx.Linear(d, ff, use_bias=use_bias,
                                 kernel_init=wp(init.lecun_normal(), ("embed", "mlp")),
                                 bias_init=wp(init.zeros_init(), ("mlp",)), rngs=rngs)
        self.mlp_down = nnx.Linear(ff, d, use_bias=use_bias,
                                   kernel_init=wp(init.lecun_normal(), ("mlp", "embed")),
                                   bias_init=wp(init.zeros_init(), ("embed",)), rngs=rngs)


def transformer_block_shardings(d_model, num_heads, d_ff, use_bias, mesh_shape):
    mesh = Mesh(np.array(jax.devices()).reshape(mesh_shape), ("data", "model"))
    with jax.set_mesh(mesh), nnx.logical_axis_rules(RULES):
        block = nnx.eval_shape(lambda: Block(d_model, num_heads, d_ff, use_bias, nnx.Rngs(1)))
        specs = nnx.get_partition_spec(nnx.state(block, nnx.Param))
    return jax.tree.map(lambda p: NamedSharding(mesh, p), specs.to_pure_dict(),
                        is_leaf=lambda x: isinstance(x, jax.sharding.PartitionSpec))
