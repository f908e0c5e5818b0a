# Accepted: jax.eval_shape runs the init abstractly (no random numbers drawn); returns a tuple.
import flax.linen as nn
import jax


def with_partitioning_kernel_shape(seed, x, features):
    model = nn.Dense(
        int(features),
        kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model")),
    )
    abstract = jax.eval_shape(model.init, jax.random.key(int(seed)), x)
    return tuple(abstract["params"]["kernel"].value.shape)
