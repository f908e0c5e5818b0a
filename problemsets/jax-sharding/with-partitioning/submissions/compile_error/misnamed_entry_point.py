# Compile error: the function is named kernel_shape, so the entry point is missing.
import flax.linen as nn
import jax
import jax.numpy as jnp


def kernel_shape(seed, x, features):
    model = nn.Dense(
        int(features),
        kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model")),
    )
    box = model.init(jax.random.key(int(seed)), x)["params"]["kernel"]
    return jnp.array(box.value.shape)
