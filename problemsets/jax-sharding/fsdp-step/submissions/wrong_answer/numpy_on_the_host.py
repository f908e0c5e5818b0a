# Wrong answer: the whole Adam step computed with NumPy on the host, the results then
# device_put in the FSDP layout. Every number and every layout is right, but nothing was
# computed on the mesh: the judge's probe cannot even trace it as one program.
import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def fsdp_step(params, x, y, learning_rate, mesh_shape):
    names = ("data", "model")[: len(mesh_shape)]
    mesh = jax.make_mesh(tuple(mesh_shape), names)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    p = {k: {n: np.asarray(v, np.float64) for n, v in layer.items()} for k, layer in params.items()}
    pre = x @ p["hidden"]["kernel"] + p["hidden"]["bias"]
    h = np.maximum(pre, 0.0)
    out = h @ p["out"]["kernel"] + p["out"]["bias"]
    loss = np.mean((out - y) ** 2)
    d_out = 2.0 * (out - y) / out.size
    d_h = (d_out @ p["out"]["kernel"].T) * (pre > 0)
    grads = {"hidden": {"kernel": x.T @ d_h, "bias": d_h.sum(0)},
             "out": {"kernel": h.T @ d_out, "bias": d_out.sum(0)}}
    b1, b2, eps = 0.9, 0.999, 1e-8
    mu = jax.tree.map(lambda g: (1 - b1) * g, grads)
    nu = jax.tree.map(lambda g: (1 - b2) * g * g, grads)
    new = jax.tree.map(lambda w, m, v: w - learning_rate * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps),
                       p, mu, nu)
    fsdp = lambda a: NamedSharding(mesh, P("data", None) if a.ndim == 2 else P())
    place = lambda tree: jax.device_put(jax.tree.map(lambda a: np.asarray(a, np.float32), tree),
                                        jax.tree.map(fsdp, tree))
    return {"loss": jax.device_put(np.float32(loss), NamedSharding(mesh, P())),
            "params": place(new), "mu": place(mu), "nu": place(nu)}
