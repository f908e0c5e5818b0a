# Wrong answer: the right update computed with NumPy on the host (np.asarray of every
# leaf): called directly it returns the right numbers, but it cannot be traced, so the
# judge's jax.jit of the step (probe 'traced') fails.
import jax
import numpy as np


def sgd_step(params, grads, lr, decay):
    def update(path, p, g):
        p = np.asarray(p, dtype=np.float32)
        g = np.asarray(g, dtype=np.float32)
        if getattr(path[-1], "key", None) == "kernel":
            g = g + np.float32(decay) * p
        return p - np.float32(lr) * g

    return jax.tree_util.tree_map_with_path(update, params, grads)
