# Wrong answer: the right numbers, worked out by hand in NumPy on the host (the gradient of
# the mean squared error is 2 * x.T @ err / err.size). The values pass; the judge's jax.jit
# of the function cannot trace NumPy on a traced value (probe one-program), on every test.
import numpy as np


def loss_and_grads(w, b, x, y):
    w, b, x, y = (np.asarray(a, dtype=np.float32) for a in (w, b, x, y))
    err = x @ w + b - y
    return {"loss": np.mean(err ** 2), "mae": np.mean(np.abs(err)),
            "grad_w": 2.0 * x.T @ err / err.size, "grad_b": 2.0 * err.sum(axis=0) / err.size}
