# Wrong answer: the right numbers computed with NumPy on the host. NumPy cannot run under
# jax.jit (with @jax.jit this would crash on the traced x), so the function is a plain
# Python function: the judge's probe 'own-jit' finds no jax.jit function to compile.
import numpy as np


def window_sums(x, window):
    c = np.cumsum(np.asarray(x, dtype=np.float64), axis=-1)
    c = np.concatenate([np.zeros(c.shape[:-1] + (1,)), c], axis=-1)
    return (c[..., window:] - c[..., :-window]).astype(np.float32)
