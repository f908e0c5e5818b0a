"""What a compiled program communicates: its collectives, read from XLA's HLO text.

The text is the ``as_text()`` of an executable that the *clean* sandbox compiled (no
submission code ran there), so it is what XLA will run, after SPMD partitioning. This
module is pure: it parses that text on the trusted side, so nothing the sandbox concludes
about the program is believed; only the text and the executable's device order are.

Each collective instruction (``all-reduce``, ``all-gather``, ``reduce-scatter``,
``all-to-all``, ``collective-permute``; ``-start`` forms count, ``-done`` halves do not)
becomes a :class:`Collective` whose device groups are mapped back onto the test's mesh:
the set of mesh axes it communicates over (``("model",)``), or ``None`` when its groups
are not the groups of any set of axes. XLA prints replica groups in three forms, all read
here: explicit lists (``{{0,1},{2,3}}``), iota lists (``[2,4]<=[4,2]T(1,0)``) and mesh
axes (``mesh['axis_0'=2,'axis_1'=4], device_ids=(...) {'axis_1'}``). Counts are of
instructions in the program, not of executions (a collective inside a loop counts once).

Hand-written, since no maintained library parses HLO text and jaxlib ships no HLO proto
bindings; the grammar read is XLA's ``ReplicaGroup`` printers (hlo_instruction.cc,
replica_group.cc).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
MAX_TEXT = 16 << 20
MAX_GROUP_DEVICES = 1 << 16

_INSTRUCTION = re.compile(
    r"=\s*[^=]*?\s(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"
    r"(-start)?\(")
_EXPLICIT = re.compile(r"replica_groups=\{((?:\{[\d,\s]*\},?\s*)*)\}")
_IOTA = re.compile(r"replica_groups=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
_MESH = re.compile(r"replica_groups=mesh\[([^\]]*)\]"
                   r"(?:,\s*device_ids=\(([^)]*(?:\))?)\))?\s*\{([^}]*)\}")
_PAIRS = re.compile(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}")
# A quoted string of the text (XLA escapes quotes and backslashes inside): the metadata's
# op_name holds the function's scope names, which the submission chose, and may spell an
# instruction with its replica groups. Blanked before a line is read.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


class HloError(ValueError):
    """The text is not what an XLA executable prints (too large, or unreadable)."""


@dataclass(frozen=True)
class Collective:
    kind: str
    axes: tuple[str, ...] | None  # None: groups that follow no set of mesh axes
    line: str  # the instruction, shortened, for sample tests' detail

    def describe(self) -> str:
        if self.axes is None:
            return f"{self.kind} over devices that are not a set of mesh axes"
        if not self.axes:
            return f"{self.kind} within single devices"
        return f"{self.kind} over {', '.join(repr(a) for a in self.axes)}"


def _iota(dims: list[int], reshape: list[int], perm: list[int] | None) -> np.ndarray:
    total = int(np.prod(reshape))
    if total > MAX_GROUP_DEVICES or int(np.prod(dims)) != total:
        raise HloError("an iota replica list that does not add up")
    ids = np.arange(total).reshape(reshape)
    if perm is not None:
        if sorted(perm) != list(range(len(reshape))):
            raise HloError("an iota replica list with a bad transpose")
        ids = ids.transpose(perm)
    return ids.reshape(dims)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _device_ids(spec: str | None, total: int) -> np.ndarray:
    """The ``device_ids=(...)`` of a mesh replica list: ``[2,4]T(1,0)`` or ``[8]`` (an iota
    reshaped and transposed), or absent (0..n-1)."""
    if not spec:
        return np.arange(total)
    match = re.fullmatch(r"\s*\[([\d,]+)\](?:T\(([\d,]+)\))?\s*", spec)
    if match is None:
        raise HloError(f"unread device ids {spec[:80]!r}")
    reshape = _ints(match.group(1))
    perm = _ints(match.group(2)) if match.group(2) else None
    return _iota([total], reshape, perm)


def groups_of(line: str, devices: int) -> list[list[int]] | None:
    """The device groups one instruction communicates in (logical ids), or None when its
    text names none (a collective-permute, read with :func:`pairs_of`)."""
    if (m := _MESH.search(line)) is not None:
        sizes: list[int] = []
        names: list[str] = []
        for part in m.group(1).split(","):
            name, _, size = part.strip().partition("=")
            if not size.strip().isdigit():
                raise HloError(f"unread mesh replica list {m.group(0)[:80]!r}")
            names.append(name.strip().strip("'\""))
            sizes.append(int(size))
        total = int(np.prod(sizes))
        if total > MAX_GROUP_DEVICES:
            raise HloError("a mesh replica list that is too large")
        grid = _device_ids(m.group(2), total).reshape(sizes)
        chosen = [a.strip().strip("'\"") for a in m.group(3).split(",") if a.strip()]
        if any(a not in names for a in chosen):
            raise HloError(f"unread mesh replica list {m.group(0)[:80]!r}")
        inside = [names.index(a) for a in chosen]
        outside = [i for i in range(len(names)) if i not in inside]
        moved = np.transpose(grid, outside + inside)
        size = int(np.prod([sizes[i] for i in inside])) if inside else 1
        return moved.reshape(-1, size).tolist()
    if (m := _IOTA.search(line)) is not None:
        dims = _ints(m.group(1))
        perm = _ints(m.group(3)) if m.group(3) else None
        return _iota(dims, _ints(m.group(2)), perm).reshape(dims[0], -1).tolist()
    if (m := _EXPLICIT.search(line)) is not None:
        body = m.group(1)
        groups = [_ints(g) for g in re.findall(r"\{([\d,\s]*)\}", body)]
        return groups or [list(range(devices))]  # {} is one group of every device
    if "replica_groups" in line:
        raise HloError(f"unread replica groups in {line[:120]!r}")
    return None


def pairs_of(line: str) -> list[tuple[int, int]]:
    m = _PAIRS.search(line)
    if m is None:
        return []
    return [(int(a), int(b)) for a, b in re.findall(r"\{(\d+),(\d+)\}", m.group(1))]


def _coords(mesh_shape: list[int], assignment: list[int],
            mesh_devices: list[int]) -> dict[int, tuple[int, ...]]:
    """Logical id (position in the executable's device assignment) -> mesh coordinates."""
    where = {d: np.unravel_index(i, mesh_shape) for i, d in enumerate(mesh_devices)}
    out: dict[int, tuple[int, ...]] = {}
    for logical, device in enumerate(assignment):
        if device in where:
            out[logical] = tuple(int(c) for c in where[device])
    return out


def axes_of_groups(groups: list[list[int]], mesh_axes: list[str], mesh_shape: list[int],
                   coords: dict[int, tuple[int, ...]]) -> tuple[str, ...] | None:
    """The smallest set of mesh axes whose groups (devices that agree on every other axis)
    are exactly ``groups``; None if there is none."""
    try:
        got = {frozenset(coords[d] for d in g) for g in groups if g}
    except KeyError:
        return None
    everything = {c for g in got for c in g}
    for size in range(len(mesh_axes) + 1):
        for subset in itertools.combinations(range(len(mesh_axes)), size):
            if any(mesh_shape[i] == 1 for i in subset):
                continue
            keyed: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
            for c in everything:
                key = tuple(v for i, v in enumerate(c) if i not in subset)
                keyed.setdefault(key, set()).add(c)
            if {frozenset(v) for v in keyed.values()} == got and all(
                    len(v) == int(np.prod([mesh_shape[i] for i in subset]))
                    for v in keyed.values()):
                return tuple(mesh_axes[i] for i in subset)
    return None


def axes_of_pairs(pairs: list[tuple[int, int]], mesh_axes: list[str],
                  coords: dict[int, tuple[int, ...]]) -> tuple[str, ...] | None:
    """The mesh axes along which a permute's sources and targets differ."""
    differ: set[int] = set()
    for a, b in pairs:
        if a not in coords or b not in coords:
            return None
        differ |= {i for i, (x, y) in enumerate(zip(coords[a], coords[b], strict=True))
                   if x != y}
    return tuple(mesh_axes[i] for i in sorted(differ))


def collectives(text: str, *, mesh_axes: list[str], mesh_shape: list[int],
                assignment: list[int], mesh_devices: list[int]) -> list[Collective]:
    """Every collective instruction of an executable's HLO text, on the test's mesh.

    ``assignment`` is the executable's device order (what logical ids index, since XLA's
    SPMD collectives use global device ids), ``mesh_devices`` the mesh's devices in
    row-major order."""
    if len(text) > MAX_TEXT:
        raise HloError(f"the compiled program's text is over {MAX_TEXT} characters")
    coords = _coords(mesh_shape, assignment, mesh_devices)
    found = []
    for raw in text.splitlines():
        raw = _STRING.sub('""', raw)
        m = _INSTRUCTION.search(raw)
        if m is None:
            continue
        kind = m.group(1)
        line = raw.strip()
        if kind == "collective-permute":
            axes = axes_of_pairs(pairs_of(line), mesh_axes, coords)
        else:
            groups = groups_of(line, len(assignment))
            axes = None if groups is None else axes_of_groups(groups, mesh_axes, mesh_shape,
                                                              coords)
        found.append(Collective(kind, axes, line[:300]))
    return found
