# Wrong answer: written for the sample's structure, {hidden, out} each {kernel, bias}: a
# tree with another layer comes back without it (and a tree without a "hidden" layer
# raises a KeyError), so it works only for the one model it was written for.


def sgd_step(params, grads, lr, decay):
    new = {}
    for layer in ("hidden", "out"):
        p, g = params[layer], grads[layer]
        new[layer] = {"kernel": p["kernel"] - lr * (g["kernel"] + decay * p["kernel"]),
                      "bias": p["bias"] - lr * g["bias"]}
    return new
