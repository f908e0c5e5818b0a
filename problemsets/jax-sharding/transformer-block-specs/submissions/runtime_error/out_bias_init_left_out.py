# Runtime error: out_bias_init is left out ("the output bias is replicated, it needs no
# annotation"), but nnx.MultiHeadAttention then uses bias_init for the output bias too: the
# q/k/v biases' two-name annotation ("model", None) on the 1-D (d_model,) output bias, which
# JAX refuses when the block is initialised under the mesh.
import jax
from flax import nnx
from jax.sharding import AxisType

init, wp = nnx.initializers, nnx.with_partitioning


class Block(nnx.Module):
    def __init__(self, d_model, num_heads, d_ff, use_bias, *, rngs):
        # LayerNorm parameters are tiny and used on the full hidden vector: replicated
        # (no annotation means P()).
        self.ln1 = nnx.LayerNorm(d_model, rngs=rngs)
        # q/k/v kernels are (d_model, heads, head_dim): column-parallel over the heads, so
        # each device owns whole heads. The output kernel (heads, head_dim, d_model) is
        # row-parallel over the heads. (The mistake: no out_bias_init, "the output bias
        # needs no annotation": it falls back to bias_init's, made for the q/k/v biases.)
        self.attn = nnx.MultiHeadAttention(
            num_heads, d_model, use_bias=use_bias, decode=False,
            kernel_init=wp(init.lecun_normal(), (None, "model", None)),
            bias_init=wp(init.zeros_init(), ("model", None)),
            out_kernel_init=wp(init.lecun_normal(), ("model", None, None)),
            rngs=rngs,
        )
        self.ln2 = nnx.LayerNorm(d_model, rngs=rngs)
        # MLP: up is column-parallel (kernel and bias split), down is row-parallel.
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
        # Shapes and annotations only: nothing is allocated or compiled.
        block = nnx.eval_shape(lambda: Block(d_model, num_heads, d_ff, use_bias, rngs=nnx.Rngs(0)))
    return nnx.get_named_sharding(nnx.state(block, nnx.Param), mesh)
