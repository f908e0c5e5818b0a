# Wrong: the two entries are swapped (shard width first, then kernel_in).
import jax.numpy as jnp


def partitionspec_layout(num_devices, kernel_in, kernel_out):
    n, k_in, k_out = int(num_devices), int(kernel_in), int(kernel_out)
    return jnp.array([k_out // n, k_in])
