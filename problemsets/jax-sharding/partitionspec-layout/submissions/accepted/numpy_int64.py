# Accepted: a NumPy int64 array built with divmod, checking that the split is even.
import numpy as np


def partitionspec_layout(num_devices, kernel_in, kernel_out):
    per_device, rest = divmod(int(kernel_out), int(num_devices))
    assert rest == 0, "kernel_out must be a multiple of num_devices"
    return np.array([int(kernel_in), per_device], dtype=np.int64)
