"""Every reason a checker may give for a hidden test that did not pass.

A hidden test's message must never carry text or numbers the submission chose: a
submission could otherwise return an object whose class is named after the hidden input,
a dict keyed by it, a mesh axis spelling it, or an array whose shape or count of wrong
values encodes it, and read the input back from the report. So a checker's ``reason`` is
one of the fixed sentences below, chosen by what is wrong, and may be prefixed by
``at <path>: `` where the path is a key path of the *expected* value (the judge's own
data: the reference's output). The words in braces come from the expected value or from a
fixed table, never from the received one. Everything the submission produced goes in the
``detail``, which only sample tests show.

docs/report.md lists these sentences; tests/unit/checkers/test_reasons.py fuzzes every
checker with values full of submission-chosen text and checks that each hidden reason is
one of them.
"""

from __future__ import annotations

import re

NOT_NUMERIC = "the result is not a numeric array"
SHAPE = "the result's shape is not the expected shape"
KIND = "the result holds values of the wrong kind (bool, integer, float or complex)"
DTYPE = "the result's dtype is not the expected dtype"
VALUES = "some values of the result are wrong"
WRONG_TYPE = "the result is not {expected_kind}"
LENGTH = "the {expected_sequence} has the wrong number of items"
KEYS_MISSING = "the keys differ: missing {expected_keys}"
KEYS_EXTRA = "the keys differ: there are keys that are not expected"
KEYS_BOTH = "the keys differ: missing {expected_keys}; there are keys that are not expected"
PSPEC = "the PartitionSpec is not the expected one"
MESH = "the mesh is not the expected mesh"
NOT_JAX_ARRAY = "the result is not a jax.Array, so it has no sharding"
NOT_NAMED = "the array is not laid out with a NamedSharding over a mesh"
DEVICES = "the array is not on the expected devices"
SHARD_SHAPE = "device {expected_device} holds a shard of the wrong shape"
PLACEMENT = "device {expected_device} holds the wrong part of the array"
NOT_EQUAL = "the value is not the expected value"
CANNOT_COMPARE = "the expected value cannot be compared (a problem bug)"

ALL = (NOT_NUMERIC, SHAPE, KIND, DTYPE, VALUES, WRONG_TYPE, LENGTH, KEYS_MISSING, KEYS_EXTRA,
       KEYS_BOTH, PSPEC, MESH, NOT_JAX_ARRAY, NOT_NAMED, DEVICES, SHARD_SHAPE, PLACEMENT,
       NOT_EQUAL, CANNOT_COMPARE)

# The kinds of expected value a reason may name (from the expected value's tag).
EXPECTED_KINDS = {
    "none": "None", "bool": "a bool", "int": "an int", "float": "a float", "str": "a string",
    "array": "an array", "list": "a list", "tuple": "a tuple", "dict": "a dict",
    "pspec": "a PartitionSpec", "named_sharding": "a NamedSharding", "tree": "a pytree",
}


def pattern(expected_paths: set[str], expected_keys: set[str],
            expected_devices: set[int]) -> re.Pattern[str]:
    """A regex that matches exactly the reasons a checker may give for one expected value:
    its key paths, its keys and its devices (for tests)."""

    def alt(words: set[str]) -> str:
        return "(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + ")"

    fills = {
        "expected_kind": alt(set(EXPECTED_KINDS.values())),
        "expected_sequence": alt({"list", "tuple"}),
        "expected_keys": alt(expected_keys or {"\0"}) + "(?:, " + alt(expected_keys or {"\0"}) + ")*",
        "expected_device": alt({str(d) for d in expected_devices} or {"\0"}),
    }
    sentences = []
    for reason in ALL:
        parts = re.split(r"(\{\w+\})", reason)
        sentences.append("".join(fills[p[1:-1]] if p.startswith("{") else re.escape(p)
                                 for p in parts))
    prefix = "(?:at " + alt(expected_paths or {"\0"}) + ": )?"
    return re.compile(prefix + "(?:" + "|".join(sentences) + ")")
