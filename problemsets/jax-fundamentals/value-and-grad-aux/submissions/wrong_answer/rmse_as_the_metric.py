# Wrong answer: the aux metric is the root mean squared error, not the mean absolute error.
# They agree only when every |error| is the same (one error, or errors of +-1).
import jax
import jax.numpy as jnp


def loss_and_grads(w, b, x, y):
    def loss_fn(w, b):
        mse = jnp.mean((x @ w + b - y) ** 2)
        return mse, jnp.sqrt(mse)

    (loss, mae), (grad_w, grad_b) = jax.value_and_grad(
        loss_fn, argnums=(0, 1), has_aux=True)(w, b)
    return {"loss": loss, "mae": mae, "grad_w": grad_w, "grad_b": grad_b}
