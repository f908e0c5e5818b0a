"""Reference: one jax.value_and_grad over (w, b) with argnums=(0, 1) and has_aux=True; the
loss function returns (mse, mae), and only the mse is differentiated."""

import jax
import jax.numpy as jnp


def loss_and_grads(w, b, x, y):
    def loss_fn(w, b):
        err = x @ w + b - y
        return jnp.mean(err ** 2), jnp.mean(jnp.abs(err))  # (value, aux)

    (loss, mae), (grad_w, grad_b) = jax.value_and_grad(
        loss_fn, argnums=(0, 1), has_aux=True)(w, b)
    return {"loss": loss, "mae": mae, "grad_w": grad_w, "grad_b": grad_b}
