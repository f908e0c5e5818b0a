# Runtime error: a path entry of a dict is a jax.tree_util.DictKey, whose name is .key;
# .name belongs to GetAttrKey (attributes of dataclasses and modules). The first leaf
# raises AttributeError: 'DictKey' object has no attribute 'name'.
import jax


def sgd_step(params, grads, lr, decay):
    def update(path, p, g):
        if path[-1].name == "kernel":
            g = g + decay * p
        return p - lr * g

    return jax.tree_util.tree_map_with_path(update, params, grads)
