# Runtime error: nnx.MultiHeadAttention takes num_heads FIRST, then in_features. Swapped,
# it asks for d_model heads over num_heads features and raises "Memory dimension ... must
# be divisible by 'num_heads' heads".
import jax
from flax import nnx
from jax.sharding import AxisType

init, wp = nnx.initializers, nnx.with_partitioning


class Block(nnx.Module):
    def __init__(self, d_model, num_heads, d_ff, use_bias, *, rngs):
        self.ln1 = nnx.LayerNorm(d_model, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(
            d_model, num_heads, use_bias=use_bias, decode=False,
            kernel_init=wp(init.lecun_normal(), (None, "model", None)),
            bias_init=wp(init.zeros_init(), ("model", None)),
            out_kernel_init=wp(init.lecun_normal(), ("model", None, None)),
            out_bias_init=wp(init.zeros_init(), (None,)),
            rngs=rngs,
        )
        self.ln2 = nnx.LayerNorm(d_model, rngs=rngs)
        self.mlp_up = nnx.Linear(
            d_model, d_ff, use_bias=use_bias,
            kernel_init=wp(init.lecun_normal(), (None, "model")),
            bias_init=wp(init.zeros_init(), ("model",)), rngs=rngs)
        self.mlp_down = nnx.Linear(
            d_ff, d_model, use_bias=use_bias,
            kernel_init=wp(init.lecun_normal(), ("model", None)),
            bias_init=wp(init.zeros_init(), (None,)), rngs=rngs)

    def __call__(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp_down(nnx.gelu(self.mlp_up(self.ln2(x))))


def transformer_block_shardings(d_model, num_heads, d_ff, use_bias, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        block = nnx.eval_shape(lambda: Block(d_model, num_heads, d_ff, use_bias, rngs=nnx.Rngs(0)))
    return nnx.get_named_sharding(nnx.state(block, nnx.Param), mesh)
