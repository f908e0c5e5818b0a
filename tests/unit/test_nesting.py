"""Bounded parsing (judge/nesting.py, issue 20): JSON and YAML from outside are refused
past 200 levels of nesting, before anything recurses on them; what ``json`` accepted
within the bound it still reads the same, with its own messages."""

from __future__ import annotations

import json

import pytest
from nesting_support import nested_list, nested_object

from judge.nesting import MAX_DEPTH, TooDeep, check_depth, load_json, load_yaml

LONE_SURROGATE = '"\\ud800"'  # json reads it, jiter does not: the second reading's path


@pytest.mark.parametrize("text", [
    nested_list(), nested_object(), nested_list(100_000),
    f"[{LONE_SURROGATE}, {nested_list()}]",  # refused by json's RecursionError
    f"[{LONE_SURROGATE}, {nested_list(MAX_DEPTH, '1')}]",  # refused by the count
], ids=["lists", "objects", "lists-100000", "second-reading", "second-reading-201"])
def test_json_nested_past_the_bound_is_refused_as_too_deep(text: str) -> None:
    with pytest.raises(TooDeep, match=f"nested more than {MAX_DEPTH} levels deep"):
        load_json(text)
    with pytest.raises(ValueError):  # what catches malformed input catches it too
        load_json(text.encode())


def test_the_bound_is_200_levels_on_either_reading() -> None:
    within, past = nested_list(MAX_DEPTH, "1"), nested_list(MAX_DEPTH + 1, "1")
    assert load_json(within) == json.loads(within)
    assert load_json(nested_list(MAX_DEPTH + 1)) == json.loads(nested_list(MAX_DEPTH + 1))
    with pytest.raises(TooDeep, match="at line 1 column 202"):
        load_json(past)
    slow = f"[{LONE_SURROGATE}, {nested_list(MAX_DEPTH - 1, '1')}]"
    assert load_json(slow) == json.loads(slow)
    check_depth(json.loads(within))
    with pytest.raises(TooDeep):
        check_depth(json.loads(past))


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}', "-0", "1e400", "NaN", "12345678901234567890123456789", "0.1",
    '"\\u00e9\\ud83d\\ude00"', LONE_SURROGATE, '{"x": [1, {"y": null}], "z": true}',
])
def test_what_json_reads_within_the_bound_reads_the_same(text: str) -> None:
    got, want = load_json(text), json.loads(text)
    assert repr(got) == repr(want)


@pytest.mark.parametrize("text", ['{"cells": [', "def f(): pass", "\ufeff{}", "[1] x"])
def test_malformed_json_keeps_the_messages_of_json(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as got:
        load_json(text)
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("text", [
    f"title: {nested_list()}\n",
    "title:\n" + "".join(f"{'  ' * (i + 1)}-\n" for i in range(1000)) + "  " * 1001 + "x\n",
    "a:\n" + "".join(f"{'  ' * (i + 1)}k{i}:\n" for i in range(1000)),
], ids=["flow", "block-sequences", "block-mappings"])
def test_yaml_nested_past_the_bound_is_refused_before_it_is_composed(text: str) -> None:
    with pytest.raises(TooDeep, match=r"nested more than 200 levels deep \(at line \d+"):
        load_yaml(text)


def test_yaml_within_the_bound_loads() -> None:
    assert load_yaml(f"a: {nested_list(MAX_DEPTH - 1, '1')}\n") == {
        "a": json.loads(nested_list(MAX_DEPTH - 1, "1"))}
    with pytest.raises(TooDeep):
        load_yaml(f"a: {nested_list(MAX_DEPTH, '1')}\n")
