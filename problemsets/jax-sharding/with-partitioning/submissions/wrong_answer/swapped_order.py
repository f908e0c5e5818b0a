# Wrong: returns (features, in_dim), the PyTorch weight layout, instead of Flax's (in_dim, features).
import flax.linen as nn
import jax
import jax.numpy as jnp


def with_partitioning_kernel_shape(seed, x, features):
    model = nn.Dense(
        int(features),
        kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model")),
    )
    box = model.init(jax.random.key(int(seed)), x)["params"]["kernel"]
    in_dim, out_dim = box.value.shape
    return jnp.array([out_dim, in_dim])
