"""A tripwire: has the submission tampered with the judge's harness?

The submission shares its interpreter with the harness, so it can replace anything the
harness uses by name. The encoder binds what it reads before the submission loads
(``judge.harness.codec``), which makes such replacements pointless; this module makes
them visible. :func:`snapshot` records, before the submission loads:

- the harness's modules (``judge.harness`` and its submodules, and the standard-library
  modules that write protocol lines: ``json``, ``json.encoder``, ``base64``): the module
  object in ``sys.modules`` and every name in its namespace;
- every function of those modules and of the bound encoder: its code, defaults and the
  contents of its closure cells (transitively, through nested functions);
- the classes whose members the encoder reads (JAX's ``ArrayImpl`` and its base
  ``jax.Array``, ``NamedSharding``, ``SingleDeviceSharding``, ``PartitionSpec``,
  ``Mesh``, the device type): every name in their namespaces;
- the protocol descriptor: the file it refers to (device and inode) and its flags;
- that no trace or profile function is installed (``sys.settrace``, ``sys.setprofile``).

:meth:`Snapshot.changed` compares the present with it, after loading and after each
test. A change means the submission interfered with the judge: the harness reports it
and stops, and the trusted side gives ``runtime_error`` marked as interference. This is a
tripwire, not a wall: code that subverts the check itself, or writes protocol lines by
hand, is beyond what any check inside the interpreter can see (docs/security.md says what
such code can and cannot achieve).
"""

from __future__ import annotations

import fcntl
import os
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

WATCHED_MODULES = ("json", "json.encoder", "base64")


def _functions(values: Iterable[Any], seen: set[int]) -> Iterable[types.FunctionType]:
    """Functions among ``values``, and those their closures and defaults hold."""
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if isinstance(value, property):
            stack += [value.fget, value.fset, value.fdel]
            continue
        if type(value) is not types.FunctionType or id(value) in seen:
            continue
        seen.add(id(value))
        yield value
        for cell in value.__closure__ or ():
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            stack.append(content)
            if type(content) is dict:  # a table of bound names (the encoder's getters)
                stack += list(content.values())
        stack += list(value.__defaults__ or ())


def _function_state(fn: types.FunctionType) -> tuple[Any, ...]:
    cells: list[Any] = []
    for cell in fn.__closure__ or ():
        try:
            content = cell.cell_contents
        except ValueError:
            cells.append(None)
            continue
        cells.append(id(content))
        if type(content) is dict:  # a table of bound names (the encoder's JAX getters)
            cells.append(tuple(sorted(_namespace(content).items())))
    return (id(fn.__code__), id(fn.__defaults__), id(fn.__kwdefaults__), tuple(cells),
            id(fn.__globals__))


def _namespace(mapping: Any) -> dict[str, int]:
    return {name: id(value) for name, value in list(mapping.items())}


def _descriptor_state(fd: int) -> tuple[int, ...] | None:
    try:
        st = os.fstat(fd)
        return (st.st_dev, st.st_ino, st.st_mode, fcntl.fcntl(fd, fcntl.F_GETFL))
    except OSError:
        return None


class Snapshot:
    def __init__(self, modules: dict[str, Any], classes: list[type], functions: list[Any],
                 protocol_fd: int) -> None:
        self.fd = protocol_fd
        self.modules = {name: (id(module), _namespace(vars(module)))
                        for name, module in modules.items()}
        self.classes = [(cls, _namespace(cls.__dict__)) for cls in classes]
        seen: set[int] = set()
        roots = [*functions]
        for module in modules.values():
            roots += list(vars(module).values())
        for cls in classes:
            roots += list(cls.__dict__.values())
        self.functions = [(fn, _function_state(fn)) for fn in _functions(roots, seen)]
        self.descriptor = _descriptor_state(protocol_fd)
        # Bound now: the check must not go through names the submission can rebind.
        self._getmodule: Callable[[str], Any] = sys.modules.get
        self._gettrace, self._getprofile = sys.gettrace, sys.getprofile

    def changed(self) -> str | None:
        """What changed since the snapshot (for the harness's own log), or None."""
        if self._gettrace() is not None or self._getprofile() is not None:
            return "a trace or profile function is installed"
        for name, (ident, namespace) in self.modules.items():
            module = self._getmodule(name)
            if id(module) != ident:
                return f"module {name} was replaced"
            if _namespace(vars(module)) != namespace:
                return f"module {name} was changed"
        for cls, namespace in self.classes:
            if _namespace(cls.__dict__) != namespace:
                return f"class {cls.__qualname__} was changed"
        for fn, state in self.functions:
            if _function_state(fn) != state:
                return f"function {fn.__qualname__} was changed"
        if _descriptor_state(self.fd) != self.descriptor:
            return "the protocol descriptor was changed"
        return None


def snapshot(protocol_fd: int, encoder: Any, extra_functions: list[Any]) -> Snapshot:
    """Record the state the harness relies on; call after the imports, before loading."""
    modules = {name: module for name, module in sys.modules.items()
               if name == "judge.harness" or name.startswith("judge.harness.")}
    for name in WATCHED_MODULES:
        if name in sys.modules:
            modules[name] = sys.modules[name]
    classes: list[type] = []
    if "jax" in sys.modules:
        import jax
        from jax._src.array import ArrayImpl
        from jax._src.lib import _jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

        classes = [ArrayImpl, jax.Array, NamedSharding, SingleDeviceSharding, PartitionSpec,
                   Mesh, _jax.Device]
    return Snapshot(modules, classes, [encoder, *extra_functions], protocol_fd)
