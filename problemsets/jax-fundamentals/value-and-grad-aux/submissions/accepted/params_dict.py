# Accepted: the parameters as one dict (a pytree) differentiated as the first argument, the
# metric returned as a dict aux; value_and_grad gives a gradient dict of the same shape.
import jax
import jax.numpy as jnp


def mse_with_metrics(params, x, y):
    pred = jnp.dot(x, params["w"]) + params["b"]
    diff = pred - y
    return jnp.mean(jnp.square(diff)), {"mae": jnp.abs(diff).mean()}


def loss_and_grads(w, b, x, y):
    grad_fn = jax.value_and_grad(mse_with_metrics, has_aux=True)
    (loss, metrics), grads = grad_fn({"w": w, "b": b}, x, y)
    return {"loss": loss, "mae": metrics["mae"], "grad_w": grads["w"], "grad_b": grads["b"]}
