# Runtime error: asks the nn.Partitioned box itself for .shape; the array is in box.value.
import flax.linen as nn
import jax
import jax.numpy as jnp


def with_partitioning_kernel_shape(seed, x, features):
    model = nn.Dense(
        int(features),
        kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model")),
    )
    kernel = model.init(jax.random.key(int(seed)), x)["params"]["kernel"]
    return jnp.array(kernel.shape)
