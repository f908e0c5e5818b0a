# Accepted: plain integer arithmetic, returned as a Python list instead of a jax.Array.


def partitionspec_layout(num_devices, kernel_in, kernel_out):
    n, k_in, k_out = int(num_devices), int(kernel_in), int(kernel_out)
    # P(None, "model"): dimension 0 is replicated, dimension 1 is split n ways.
    return [k_in, k_out // n]
