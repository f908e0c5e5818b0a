"""Nesting: JSON and YAML from outside the judge, parsed with their depth bounded.

A document nested deeply enough breaks a parser that recurses. PyYAML's ``CSafeLoader``
composes a document by recursing on the C stack, so a ``problem.yaml`` of
``title: [[[[...]]]]`` 50,000 deep (about 100 KB) kills the process with SIGSEGV; the
standard library's ``json`` stops at about 1,000 levels with a ``RecursionError``, which
callers that expect ``ValueError`` let through (a 500), and a document a little less deep
passes the parser and breaks the next recursive step instead (nbformat's schema check,
``json.dumps``). So every parser of bytes from outside (request bodies, notebooks,
problem packages, what LMS platforms send and answer, the CLI reading a judge's answers)
goes through this module, which refuses a document in which any value lies inside more
than :data:`MAX_DEPTH` arrays or objects (sequences or mappings) with :class:`TooDeep`.
``TooDeep`` is a ``ValueError``, so a caller's handler of malformed input catches it too;
callers that say more catch it first. Sizes are bounded by the callers, before parsing.

JSON: pydantic-core's ``from_json`` (the jiter parser, in Rust): linear time, no
recursion on the C stack, and it stops at 200 levels ("recursion limit exceeded"), which
is where :data:`MAX_DEPTH` comes from. A text that jiter refuses for another reason is
read again by the standard library, so that what ``json`` accepts and jiter does not (a
lone surrogate escape such as ``"\\ud800"``) keeps its meaning and a malformed text keeps
``json``'s message (``Expecting value: line 1 column 12``); the depth of what that second
reading gives is then counted without recursion (and ``json``'s own ``RecursionError`` is
:class:`TooDeep`).

YAML: the parse events are counted before anything composes the document (libyaml's
parser, and PyYAML's own, keep their states on the heap: they do not recurse), and the
count stops at the first node too deep, so a deep document costs no more than
:data:`MAX_DEPTH` levels of parsing; only a document within the bound is composed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml
from pydantic_core import from_json

MAX_DEPTH = 200
# libyaml's safe loader where PyYAML was built with it (8x faster than the pure-Python one,
# which made listing 20 problems take 0.4 s), the same safe subset either way.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_JITER_TOO_DEEP = re.compile(r"recursion limit exceeded(?: at (line \d+ column \d+))?")
_NODES = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)
_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class TooDeep(ValueError):
    """A document nested more than :data:`MAX_DEPTH` levels; ``where`` is the place
    the parser stopped ("line 3 column 12"), when it says."""

    def __init__(self, where: str = "") -> None:
        self.where = where
        super().__init__(f"nested more than {MAX_DEPTH} levels deep"
                         + (f" (at {where})" if where else ""))


def load_json(text: str | bytes) -> Any:
    """``text`` (str, or bytes in UTF-8) as JSON, as ``json.loads`` reads it; raises
    ``ValueError`` when it is not JSON, :class:`TooDeep` when it is nested too deeply."""
    try:
        return from_json(text)
    except ValueError as exc:
        deep = _JITER_TOO_DEEP.match(str(exc))
        if deep:
            raise TooDeep(deep.group(1) or "") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep() from None
    check_depth(value)
    return value


def check_depth(value: Any) -> None:
    """Raise :class:`TooDeep` if a value inside ``value`` (lists and dicts) lies inside
    more than :data:`MAX_DEPTH` of them; counted without recursion."""
    if not isinstance(value, dict | list):
        return
    stack: list[tuple[dict[str, Any] | list[Any], int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()  # ``item`` lies inside ``level`` containers
        children = list(item.values()) if isinstance(item, dict) else item
        if children and level >= MAX_DEPTH:
            raise TooDeep()
        stack.extend((c, level + 1) for c in children if isinstance(c, dict | list))


def yaml_events(text: str) -> Iterator[yaml.Event]:
    """The parse events of ``text`` (the safe loader's), checked as they come: raises
    :class:`TooDeep` at the first node inside more than :data:`MAX_DEPTH` collections,
    ``yaml.YAMLError`` when it is not YAML."""
    depth = 0
    for event in yaml.parse(text, Loader=SAFE_LOADER):
        if isinstance(event, _NODES) and depth > MAX_DEPTH:
            mark = event.start_mark
            raise TooDeep(f"line {mark.line + 1} column {mark.column + 1}" if mark else "")
        if isinstance(event, _OPEN):
            depth += 1
        elif isinstance(event, _CLOSE):
            depth -= 1
        yield event


def load_yaml(text: str) -> Any:
    """``text`` loaded with the safe loader once its depth is known to be within
    :data:`MAX_DEPTH` (:class:`TooDeep` otherwise)."""
    for _ in yaml_events(text):
        pass
    return yaml.load(text, Loader=SAFE_LOADER)
