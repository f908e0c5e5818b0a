# Compile error: a missing closing parenthesis makes the file a SyntaxError.
import jax.numpy as jnp


def partitionspec_layout(num_devices, kernel_in, kernel_out):
    n = int(num_devices
    return jnp.array([int(kernel_in), int(kernel_out) // n])
