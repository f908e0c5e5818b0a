# Wrong answer: the kernels are decayed after the SGD update, (p - lr * g) * (1 - lr *
# decay), instead of with it, p - lr * (g + decay * p): the two differ by lr**2 * decay
# * g, invisible when lr * decay is small and plain when it is not.
import jax


def sgd_step(params, grads, lr, decay):
    def update(path, p, g):
        p = p - lr * g
        if getattr(path[-1], "key", None) == "kernel":
            p = p * (1 - lr * decay)
        return p

    return jax.tree_util.tree_map_with_path(update, params, grads)
