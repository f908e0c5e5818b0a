# Wrong answer: the gradients are taken of the sum of squared errors while the mean is
# reported as the loss: every gradient is N * out_dim times too large, which only a test
# with a single error (one row, one output) cannot see.
import jax
import jax.numpy as jnp


def loss_and_grads(w, b, x, y):
    def loss_fn(w, b):
        err = x @ w + b - y
        return jnp.sum(err ** 2), jnp.mean(jnp.abs(err))

    (total, mae), (grad_w, grad_b) = jax.value_and_grad(
        loss_fn, argnums=(0, 1), has_aux=True)(w, b)
    return {"loss": total / y.size, "mae": mae, "grad_w": grad_w, "grad_b": grad_b}
