"""A class of 30 submissions to ``jax-sharding/tensor-parallel-mlp`` for the similarity
tests (issue 26): 22 students who wrote their own solution, 3 who wrote theirs and had
it copied by another student who disguised the copy, and 2 who kept the problem's
starter skeleton (its docstrings, its ``mlp_block`` and ``tensor_parallel_mlp`` stubs)
and wrote their own bodies in it.

How the independent students are made: a solution is rendered from nine choices a
student makes (the approach: ``shard_map`` with ``psum`` as the reference does, ``jit``
with shardings and ``with_sharding_constraint`` (GSPMD), or ``shard_map`` over
column-/row-parallel helper functions; the matrix product: ``@``, ``jnp.dot``,
``jnp.matmul``, ``jnp.einsum``, ``lax.dot_general``; the ReLU; how the inputs are
placed; how the mesh is made; where the specs live; where ``jit`` goes; type hints and
docstrings; comments and asserts) and the student's own names. Each student's choices
are drawn with a seeded generator and kept only when they differ from every earlier
student's in at least four of the nine, so no two independent students are the same
program with other names. They share what real students share: the same API calls,
the same idioms, often the reference's specs.

Small phrasing (``Style.micro``, drawn per student and not counted in the distance):
the mesh shape's spelling, the axis names as a tuple, a constant or a list, ``lax.psum``
or ``jax.lax.psum`` with or without ``axis_name=``, the block called with ``*args`` or
each argument, the bias added before or after the product, the ReLU on its own line or
on the product's, the inputs as a tuple or a list, ``NamedSharding`` with or without its
keywords, ``y + b2`` or ``b2 + y`` at the end. Real students who make the same choice
still phrase it their own way; without the last four (added for the robustness bench,
``bench/similarity.py``) independent students who shared most choices wrote the same
lines token for token. A copy keeps its original's phrasing.
Every submission parses (``ast.parse``): a body line that is two lines (the mesh
shape unpacked, then the mesh) is indented line by line; a quarter of the submissions
once had the mesh line at column 0.

How a copy is made from its original (the disguises of the issue): every identifier the
student named is renamed, the top-level definitions and independent statements are
reordered, a helper is inlined into its caller (the rendering with ``inline=True``) and
dead code is added (an unused function, an unused variable, a branch never taken).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

PROBLEM = "jax-sharding/tensor-parallel-mlp"
FAMILIES = ("shardmap", "gspmd", "helpers")
MATMULS = ("at", "dot", "matmul", "einsum", "dot_general")
RELUS = ("nn", "maximum", "where")
PLACES = ("listcomp", "explicit", "treemap", "loop")
MESHES = ("make_mesh", "Mesh", "mesh_utils")
SPECS = ("tuple", "names", "inline")
JITS = ("outer", "inner", "decorator")
DOCS = (0, 1, 2)  # none, docstrings, docstrings and type hints
NOTES = (0, 1, 2)  # none, comments, comments and asserts
COPIED = (("s03", "s17"), ("s08", "s24"), ("s12", "s29"))
STARTER_ONLY = ("s05", "s21")
DISTANCE = 4  # of the nine choices, at least this many differ between two students
NAMES = [  # each student's own vocabulary: (input, hidden, output, local fn, mesh, args)
    ("x", "h", "y", "block", "mesh", "args"),
    ("inp", "hidden", "out", "local_mlp", "m", "arrays"),
    ("xs", "act", "res", "per_device", "dev_mesh", "inputs"),
    ("batch", "z", "result", "shard_fn", "grid", "operands"),
    ("a", "hid", "o", "mlp_local", "msh", "vals"),
    ("data", "h1", "logits", "_block", "device_mesh", "tensors"),
]


@dataclass(frozen=True)
class Style:
    family: str
    matmul: str
    relu: str
    place: str
    mesh: str
    specs: str
    jit: str
    docs: int
    notes: int
    names: tuple[str, ...]
    inline: bool = False  # helpers inlined into their caller
    dead: int = -1  # which dead code is added (an index of DEAD), -1: none
    order: int = 0  # a permutation of top-level blocks and independent statements
    micro: tuple[int, ...] = (0,) * 9  # how small things are phrased (see _draw)

    def choices(self) -> tuple[object, ...]:
        return (self.family, self.matmul, self.relu, self.place, self.mesh, self.specs,
                self.jit, self.docs, self.notes)


def _mm(style: Style, a: str, b: str, sub: str = "ij,jk->ik") -> str:
    return {"at": f"{a} @ {b}", "dot": f"jnp.dot({a}, {b})", "matmul": f"jnp.matmul({a}, {b})",
            "einsum": f'jnp.einsum("{sub}", {a}, {b})',
            "dot_general": f"lax.dot_general({a}, {b}, (((1,), (0,)), ((), ())))"}[style.matmul]


def _relu(style: Style, v: str) -> str:
    return {"nn": f"jax.nn.relu({v})", "maximum": f"jnp.maximum({v}, 0.0)",
            "where": f"jnp.where({v} > 0, {v}, 0.0)"}[style.relu]


def _imports(style: Style) -> list[str]:
    lines = ["import jax", "import jax.numpy as jnp"]
    if style.matmul == "dot_general" or style.family != "gspmd":
        lines.append("from jax import lax")
    if style.mesh == "Mesh":
        lines += ["import numpy as np", "from jax.sharding import Mesh"]
    if style.mesh == "mesh_utils":
        lines += ["from jax.experimental import mesh_utils", "from jax.sharding import Mesh"]
    if style.family == "gspmd" and style.jit == "decorator":
        lines.append("from functools import partial")
    lines.append("from jax.sharding import NamedSharding, PartitionSpec as P")
    if style.micro[1] == 1:
        lines.append('\nAXES = ("data", "model")')
    return ["\n".join(lines)]


SHAPES = ("tuple({s})", "(*{s},)", "({s}[0], {s}[1])", "(rows, cols)")
AXES = ('("data", "model")', "AXES", '["data", "model"]')


def _mesh(style: Style, shape: str) -> str:
    m = style.names[4]
    dims = SHAPES[style.micro[0]].format(s=shape)
    axes = AXES[style.micro[1]]
    pre = "rows, cols = mesh_shape\n" if style.micro[0] == 3 else ""
    return pre + {
        "make_mesh": f"{m} = jax.make_mesh({dims}, {axes})",
        "Mesh": f"{m} = Mesh(np.array(jax.devices()[:{dims}[0] * {dims}[1]])"
                f".reshape({dims}), {axes})",
        "mesh_utils": f"{m} = Mesh(mesh_utils.create_device_mesh({dims}), {axes})",
    }[style.mesh]


def _psum(style: Style, v: str) -> str:
    return ('lax.psum({v}, "model")', 'jax.lax.psum({v}, "model")',
            'lax.psum({v}, axis_name="model")', 'jax.lax.psum({v}, axis_name="model")',
            )[style.micro[2]].format(v=v)


SPEC_VALUES = ('P("data", None)', 'P(None, "model")', 'P("model")', 'P("model", None)', "P()")
SPEC_NAMES = ("x_spec", "w1_spec", "b1_spec", "w2_spec", "b2_spec")


def _spec_block(style: Style) -> list[str]:
    note = "  # rows over data" if style.notes else ""
    if style.specs == "tuple":
        body = ",\n".join(f"    {v}" for v in SPEC_VALUES)
        return [f"IN_SPECS = (\n{body},\n)\nOUT_SPEC = P(\"data\", None){note}"]
    if style.specs == "names":
        lines = [f"{n.upper()} = {v}" for n, v in zip(SPEC_NAMES, SPEC_VALUES, strict=True)]
        if style.order % 2:
            lines = lines[::-1]
        return ["\n".join(lines) + "\nIN_SPECS = (" + ", ".join(n.upper() for n in SPEC_NAMES)
                + ")" + f"\nOUT_SPEC = P(\"data\", None){note}"]
    return []


def _in_specs(style: Style) -> str:
    return "IN_SPECS" if style.specs != "inline" else "(" + ", ".join(SPEC_VALUES) + ")"


def _out_spec(style: Style) -> str:
    return "OUT_SPEC" if style.specs != "inline" else 'P("data", None)'


def _hints(style: Style, params: str) -> str:
    if style.docs < 2:
        return params
    return ", ".join(f"{p.strip()}: jax.Array" if p.strip() != "mesh_shape" else
                     "mesh_shape: list[int]" for p in params.split(","))


def _doc(style: Style, text: str) -> str:
    return f'    """{text}"""\n' if style.docs else ""


def _layer_helpers(style: Style) -> list[str]:
    x, h, y = style.names[:3]
    col = (f"def column_parallel({_hints(style, f'{x}, w, b')}):\n"
           + _doc(style, "First layer: each model device owns a slice of the hidden units.")
           + f"    return {_relu(style, _mm(style, x, 'w') + ' + b')}\n")
    row = (f"def row_parallel({_hints(style, f'{h}, w')}):\n"
           + _doc(style, "Second layer: partial sums, completed over 'model'.")
           + f'    return {_psum(style, _mm(style, h, "w"))}\n')
    return [col, row]


def _local(style: Style) -> str:
    x, h, y, fn = style.names[:4]
    params = _hints(style, f"{x}, w1, b1, w2, b2")
    out = [f"def {fn}({params}):", _doc(style, "The block on one device's shards.").rstrip("\n")]
    if style.family == "helpers" and not style.inline:
        out += [f"    {h} = column_parallel({x}, w1, b1)", f"    {y} = row_parallel({h}, w2)"]
    elif style.family == "helpers":  # inlined: the helpers' expressions at the call
        out += [f"    {h} = {_relu(style, _mm(style, x, 'w1') + ' + b1')}",
                f"    {y} = {_psum(style, _mm(style, h, 'w2'))}"]
    else:
        pre = f"    {h} = {_mm(style, x, 'w1')} + b1" if style.micro[4] else \
            f"    {h} = b1 + {_mm(style, x, 'w1')}"
        if style.notes:
            pre += "  # column-parallel: local hidden slice"
        first = [pre, f"    {h} = {_relu(style, h)}"] if not style.micro[5] else \
            [f"    {h} = {_relu(style, _mm(style, x, 'w1') + ' + b1')}"]
        out += [*first, f"    {y} = {_mm(style, h, 'w2')}",
                f"    {y} = {_psum(style, y)}"
                + ("  # all-reduce the partial sums" if style.notes else "")]
    out.append(f"    return {y} + b2" if not style.micro[8] else f"    return b2 + {y}")
    return "\n".join(line for line in out if line) + "\n"


def _ns(style: Style, mesh: str, spec: str) -> str:
    return f"NamedSharding(mesh={mesh}, spec={spec})" if style.micro[7] else \
        f"NamedSharding({mesh}, {spec})"


def _place(style: Style) -> list[str]:
    m, args = style.names[4], style.names[5]
    names = "[x, w1, b1, w2, b2]" if style.micro[6] else "(x, w1, b1, w2, b2)"
    specs = _in_specs(style)
    if style.place == "listcomp":
        return [f"{args} = [jax.device_put(v, {_ns(style, m, 's')}) "
                f"for v, s in zip({names}, {specs})]"]
    if style.place == "treemap":
        return [f"shardings = tuple({_ns(style, m, 's')} for s in {specs})",
                f"{args} = jax.tree.map(jax.device_put, {names}, shardings)"]
    if style.place == "loop":
        return [f"{args} = []", f"for v, s in zip({names}, {specs}):",
                f"    {args}.append(jax.device_put(v, {_ns(style, m, 's')}))"]
    return [f"{args} = (" + ", ".join(
        f"jax.device_put({v}, {_ns(style, m, s)})"
        for v, s in zip(names[1:-1].split(", "), SPEC_VALUES, strict=True)) + ")"]


def _entry(style: Style) -> str:
    x, h, y, fn, m, args = style.names
    head = f"def tensor_parallel_mlp({_hints(style, 'x, w1, b1, w2, b2, mesh_shape')}):"
    body: list[str] = []
    if style.notes == 2:
        body.append("assert len(mesh_shape) == 2, mesh_shape")
    body.append(_mesh(style, "mesh_shape"))
    place = _place(style)
    if style.family == "gspmd":
        fwd = [f"def forward({x}, w1, b1, w2, b2):",
               f"    {h} = {_relu(style, _mm(style, x, 'w1') + ' + b1')}",
               f'    {h} = jax.lax.with_sharding_constraint({h}, NamedSharding({m}, '
               'P("data", "model")))',
               f"    return {_mm(style, h, 'w2')} + b2"]
        if style.jit == "decorator":
            fwd = [f"@partial(jax.jit, out_shardings=NamedSharding({m}, {_out_spec(style)}))",
                   *fwd]
            call = f"return forward(*{args})"
        else:
            call = (f"return jax.jit(forward, out_shardings=NamedSharding({m}, "
                    f"{_out_spec(style)}))(*{args})")
        body += (place + fwd if style.order % 2 else fwd + place) + [call]
    else:
        sm = f"jax.shard_map({fn}, mesh={m}, in_specs={_in_specs(style)}, " \
             f"out_specs={_out_spec(style)})"
        call = f"(*{args})" if style.micro[3] else f"({args}[0], {args}[1], {args}[2], " \
            f"{args}[3], {args}[4])"
        if style.jit == "inner":
            body += place + [f"return jax.jit({sm}){call}"]
        else:
            body += [f"run = jax.jit({sm})", *place, f"return run{call}"] if style.order % 2 \
                else [*place, f"run = jax.jit({sm})", f"return run{call}"]
    doc = _doc(style, "Megatron-style MLP: column- then row-parallel, one psum.")
    return head + "\n" + doc + "\n".join("    " + line for item in body
                                           for line in item.split("\n")) + "\n"


DEAD = ('def _debug_shapes(*arrays):\n    for arr in arrays:\n        print(arr.shape, '
        'arr.dtype)\n    return len(arrays)\n',
        'def _check(tree):\n    leaves = jax.tree.leaves(tree)\n    assert all(hasattr(l, '
        '"sharding") for l in leaves)\n    return leaves\n',
        'def _unused_reference(x, w1, b1, w2, b2):\n    return jnp.tanh(x) * 0 + b2.sum()\n')


def render(style: Style) -> str:
    blocks = _imports(style) + _spec_block(style)
    defs: list[str] = []
    if style.family == "helpers" and not style.inline:
        defs += _layer_helpers(style)
    if style.family != "gspmd":
        defs.append(_local(style))
    defs.append(_entry(style))
    if style.dead >= 0:
        defs.insert(0, DEAD[style.dead])
        defs[-1] = defs[-1].replace("\n    ", "\n    unused_scale = 1.0\n    if False:\n"
                                    "        print(\"never\")\n    ", 1)
    if style.order % 3 == 1:
        defs = defs[::-1]
    elif style.order % 3 == 2:
        defs = defs[1:] + defs[:1]
    return "\n\n".join(blocks + defs)


def _draw(rng: random.Random, taken: list[Style], names: tuple[str, ...], family: str | None
          ) -> Style:
    while True:
        style = Style(family or rng.choice(FAMILIES), rng.choice(MATMULS), rng.choice(RELUS),
                      rng.choice(PLACES), rng.choice(MESHES), rng.choice(SPECS),
                      rng.choice(JITS), rng.choice(DOCS), rng.choice(NOTES), names,
                      order=rng.randrange(6),
                      micro=(rng.randrange(len(SHAPES)), rng.randrange(len(AXES)),
                             rng.randrange(4), rng.randrange(2), rng.randrange(2),
                             rng.randrange(2), rng.randrange(2), rng.randrange(2),
                             rng.randrange(2)))
        if all(sum(a != b for a, b in zip(style.choices(), t.choices(), strict=True)) >= DISTANCE
               for t in taken):
            return style


def _disguise(style: Style, rng: random.Random, dead: int) -> Style:
    """The copy: other names, another order, helpers inlined, dead code."""
    others = [n for n in NAMES if n != style.names]
    return replace(style, names=rng.choice(others), inline=True, dead=dead,
                   order=(style.order + 1 + rng.randrange(5)) % 6 or 1)


def starter_only(style: Style, starter: str) -> str:
    """The starter's skeleton kept (its docstrings, imports, spec comments, the stubs'
    names and its mesh line), filled with the student's own code."""
    s = replace(style, names=(*style.names[:3], "mlp_block", "mesh", style.names[5]),
                family="helpers" if style.family == "helpers" else "shardmap",
                mesh="make_mesh", specs="tuple", docs=0)
    head = starter.split("IN_SPECS", 1)[0]
    specs = "IN_SPECS = (\n" + "".join(
        f"    {v},  # TODO {n}\n" for v, n in zip(SPEC_VALUES, ("x", "w1", "b1", "w2", "b2"),
                                               strict=True)) \
        + ")\nOUT_SPEC = P(\"data\", None)  # TODO: rows split over 'data', complete over " \
        "'model'\n"
    block_doc = '    """The block on one device\'s shards: what must be communicated, and when?"""\n'
    entry_doc = ('    """Build the mesh from mesh_shape, place the inputs and run the block on '
                 'it.\n\n    Returns a jax.Array of shape (N, out_dim) with sharding '
                 'P("data", None).\n    """\n')
    local = _local(s).replace(":\n", ":\n" + block_doc, 1)
    entry = _entry(s).replace(":\n", ":\n" + entry_doc, 1)
    helpers = _layer_helpers(s) if s.family == "helpers" else []
    extra = "".join(line + "\n" for line in _imports(s)[0].splitlines()
                    if line not in head and "PartitionSpec as P" not in line)
    return "\n\n".join([head.rstrip("\n") + "\n" + extra + specs, *helpers, local,
                        entry])


def make_class(starter: str, seed: int = 26) -> dict[str, str]:
    """Student id (``s01`` .. ``s30``) to code."""
    rng = random.Random(seed)
    taken: list[Style] = []
    styles: dict[str, Style] = {}
    copies = {copy: original for original, copy in COPIED}
    for n in range(1, 31):
        sid = f"s{n:02d}"
        if sid in copies:
            continue
        family = "helpers" if sid in dict(COPIED) else None
        styles[sid] = _draw(rng, taken, NAMES[n % len(NAMES)], family)
        taken.append(styles[sid])
    code = {sid: render(style) for sid, style in styles.items()}
    for n, (original, copy) in enumerate(COPIED):
        code[copy] = render(_disguise(styles[original], rng, n))
    for sid in STARTER_ONLY:
        code[sid] = starter_only(styles[sid], starter)
    return dict(sorted(code.items()))
