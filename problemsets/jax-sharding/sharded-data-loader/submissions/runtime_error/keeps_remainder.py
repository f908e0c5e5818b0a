# Runtime error: shards all N rows without dropping the remainder; when N does not divide
# by the data axis, make_array_from_callback raises IndivisibleError.
import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def load_process_batch(batch, process_index, process_count, mesh_shape):
    data, model = mesh_shape
    x = np.asarray(batch)
    shard = x.shape[0] // data
    per = 8 // process_count
    first, last = process_index * per // model, (process_index * per + per - 1) // model
    local_rows = x[first * shard:(last + 1) * shard]
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    array = jax.make_array_from_callback(
        x.shape, NamedSharding(mesh, P("data", None)), lambda idx: x[idx])  # BUG: N rows
    return {"local_rows": local_rows, "array": array}
