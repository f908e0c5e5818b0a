# Wrong: takes in_dim from x.shape[0] (the batch size) instead of x.shape[-1].
import jax.numpy as jnp


def with_partitioning_kernel_shape(seed, x, features):
    return jnp.array([x.shape[0], int(features)])
