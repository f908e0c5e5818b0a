"""Reference: one jax.tree_util.tree_map_with_path over the parameters and the gradients
together; the path's last entry (a DictKey) names the leaf, and only leaves named
"kernel" get the decay term added to their gradient before the SGD update."""

import jax


def _is_kernel(path):
    return getattr(path[-1], "key", None) == "kernel"


def sgd_step(params, grads, lr, decay):
    def update(path, p, g):
        if _is_kernel(path):       # decided from the tree's structure, at trace time
            g = g + decay * p
        return p - lr * g

    return jax.tree_util.tree_map_with_path(update, params, grads)
