"""A probe's step in the harness: which half of :mod:`judge.harness.program` a run does.

A submission's run exports the entry point (``export`` in the test), tracing each distinct
request once; a clean run, which loads no submission code, compiles and runs a program it
was handed (``program``). Nothing else is mixed: a clean run never exports, a submission's
run never compiles a program it was handed.
"""

from __future__ import annotations

import json
from typing import Any

from judge.harness import inputs, program

_EXPORTED: dict[str, dict[str, Any]] = {}  # this submission's exports, by request


def step(test: dict[str, Any], entry: Any, clean: bool, fields: dict[str, Any],
         encode: Any, result_bytes: int, jnp: Any, np: Any) -> None:
    """One probe step (judge.probes): export the entry point in the submission's sandbox,
    or compile and run an exported program in a clean one; its result goes in ``fields``."""
    if clean:
        if test.get("program") is None:
            raise program.Refused("a clean run only runs programs")
        value, facts = program.run(test["program"], inputs.arguments(test, jnp, np), encode,
                                   result_bytes // 2, result_bytes // 3)
        fields.update(value=value, facts=facts)
        return
    if test.get("export") is None:
        raise program.Refused("a submission's run does not run programs")
    # Tests of the same shapes and static values ask for the same export: traced once.
    key = json.dumps([test["export"], test["args"]], sort_keys=True)
    if key not in _EXPORTED:
        args = [a if is_abstract(a) else inputs.convert(inputs.decode_input(a), k, jnp, np)
                for a, k in zip(test["args"], test["kinds"], strict=True)]
        _EXPORTED[key] = program.export(entry, test["export"], args, result_bytes * 3 // 4)
    fields["exported"] = _EXPORTED[key]


def is_abstract(arg: dict[str, Any]) -> bool:
    """An export argument given as an aval, or a tree (dict, list) with avals in it: the
    export makes ShapeDtypeStructs of it (program.export); anything else is a value."""
    if arg.get("t") == "aval":
        return True
    if arg.get("t") == "dict":
        return any(is_abstract(v) for _, v in arg["items"])
    if arg.get("t") in ("list", "tuple"):
        return any(is_abstract(v) for v in arg["items"])
    return False
