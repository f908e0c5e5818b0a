# Time limit: searches box.names for the "model" axis but never advances the index.
import flax.linen as nn
import jax
import jax.numpy as jnp


def with_partitioning_kernel_shape(seed, x, features):
    model = nn.Dense(
        int(features),
        kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model")),
    )
    box = model.init(jax.random.key(int(seed)), x)["params"]["kernel"]
    axis = 0
    while box.names[axis] != "model":
        pass  # forgot: axis += 1
    return jnp.array(box.value.shape)
