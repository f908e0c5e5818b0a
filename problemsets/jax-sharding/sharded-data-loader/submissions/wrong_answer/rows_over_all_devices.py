# Wrong: loads the right rows but shards the global batch over both mesh axes,
# P(("data", "model")), so every device holds a different slice; the model axis should
# hold copies of each data shard (P("data", None)).
import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def load_process_batch(batch, process_index, process_count, mesh_shape):
    data, model = mesh_shape
    x = np.asarray(batch)
    usable = x.shape[0] // data * data
    shard = usable // data
    per = 8 // process_count
    first, last = process_index * per // model, (process_index * per + per - 1) // model
    local_rows = x[first * shard:(last + 1) * shard]
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    array = jax.device_put(x[:usable], NamedSharding(mesh, P(("data", "model"))))  # BUG
    return {"local_rows": local_rows, "array": array}
