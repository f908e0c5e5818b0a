# Accepted: a Dense kernel is always (in_dim, features), whatever the annotation; NumPy array.
import numpy as np


def with_partitioning_kernel_shape(seed, x, features):
    return np.array([x.shape[-1], int(features)])
