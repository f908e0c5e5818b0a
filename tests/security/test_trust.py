"""Attacks on what the judge promises about hidden tests, one for each way the review of
issue 10 found to break it: hidden inputs read from the sandbox before their test and
printed where the report shows them, submission-chosen text in a hidden test's message,
layouts forged by replacing what the encoder reads, and lines on the protocol descriptor
that stall or poison the parser.

security/echo's hidden inputs are distinctive numbers (support.INPUT_HEADS: the attacks
look for a 7-digit head and its 3 digits, so the whole number is never in their source);
demo/sharded's answer is a sharded jax.Array graded by the sharding checker."""

from __future__ import annotations

import json
import textwrap

import pytest

from judge.catalog import Catalog
from judge.grading import grade
from judge.judging import HIDDEN_OUTPUT_NOTE
from judge.report import VerdictReport
from judge.sandbox.base import Sandbox
from judge.sandbox.supervisor import INTERFERED
from judge.settings import Settings
from judge.verdict import Verdict

from .support import INPUT_HEADS, Judge, describe, facts, verdicts

pytestmark = pytest.mark.slow

HIDDEN_INPUTS = [(head + tail).decode() for head, tail in INPUT_HEADS.values()]


def shown(report: VerdictReport) -> str:
    """Everything a report shows, as one text."""
    return report.model_dump_json()


def assert_no_hidden_input_shown(report: VerdictReport) -> None:
    text = shown(report)
    leaked = [value for value in HIDDEN_INPUTS if value in text]
    assert not leaked, f"hidden inputs in the report: {leaked}\n{describe(report)}"


# -- 1. hidden inputs enter the sandbox only when their test starts ------------------------


def test_no_hidden_input_is_in_the_sandbox_before_its_own_test(judge_echo: Judge) -> None:
    # At load time and in each sample test, the stack (the harness's frames and what the
    # supervisor sent), the heap, the modules and every readable byte of the process are
    # searched for the hidden inputs, and whatever is found is printed: sample tests'
    # output is shown. Before the fix the whole job, hidden inputs included, sat in the
    # harness's frame from the start.
    report = judge_echo("""
        import json

        def search(label):
            objects, found = SCAN_OBJECTS()
            memory, in_memory = SCAN_MEMORY()
            found.update(in_memory)
            print("@@", json.dumps({label: {"found": sorted(found), "objects": objects,
                                            "memory": memory}}), flush=True)

        search("load")

        def echo(secret):
            if int(secret) in (0, 1):  # the samples
                search(f"sample {int(secret)}")
            return int(secret)
    """)
    seen = facts(report)
    assert set(seen) == {"load", "sample 0", "sample 1"}, describe(report)
    for phase, what in seen.items():
        assert what["found"] == [], (phase, what)
        assert what["objects"] > 10_000 and what["memory"] > 200 << 20, (phase, what)
    assert report.verdict is Verdict.ACCEPTED, describe(report)  # each input at its test
    assert_no_hidden_input_shown(report)


def test_a_thread_that_waits_for_the_hidden_inputs_shows_nothing(judge_echo: Judge) -> None:
    # A thread started at load time searches every thread's stack again and again and
    # prints what it finds. It does find the hidden inputs (each when its test starts: a
    # hidden test waits until the watcher has printed its input, up to the test's limit),
    # but nothing printed once the first hidden test has started is shown: only a note
    # that output was written. Before the fix it found them all at load time and printed
    # them there.
    report = judge_echo("""
        import json, sys, threading, time
        TOLD = set()

        def watch():
            while True:
                _, found = SCAN_OBJECTS(heap=False)
                for key in set(found) - TOLD:
                    print("@@", json.dumps({"found " + key: found[key]}), flush=True)
                    print("found", found[key], file=sys.stderr, flush=True)
                    TOLD.add(key)
                time.sleep(0.05)

        threading.Thread(target=watch, daemon=True).start()

        def echo(secret):
            hidden = SEARCH(str(secret))  # {key: secret} for a hidden input
            while set(hidden) - TOLD:
                time.sleep(0.01)
            return int(secret)
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    assert not any(key.startswith("found") for key in facts(report)), describe(report)
    assert_no_hidden_input_shown(report)
    assert HIDDEN_OUTPUT_NOTE in report.stdout, describe(report)  # it did print, later


# -- 2. a hidden test's message carries no text the submission chose --------------------

CHOSEN_TEXT = {
    # The input, in whatever the submission returns, in each place a checker looks.
    "class name": "return type('LEAK_' + str(secret), (), {})()",
    "dict key": "return {'LEAK_' + str(secret): 1}",
    "list of that length": "return [0] * (int(secret) % 9973)",
    "array shape": "return np.zeros((int(str(secret)[:4]), 1), np.int8)",
    "exception": "raise type('LEAK_' + str(secret), (Exception,), {})('LEAK_' + str(secret))",
    "PartitionSpec": "return P('LEAK_' + str(secret))",
    "mesh axis": "return NamedSharding(Mesh(np.array(jax.devices()[:1]), ('LEAK_' + str(secret),)), P())",
}


@pytest.mark.parametrize("vector", list(CHOSEN_TEXT))
def test_a_hidden_tests_message_holds_only_the_judges_words(judge_echo: Judge,
                                                            vector: str) -> None:
    body = textwrap.indent(CHOSEN_TEXT[vector], " " * 12)
    report = judge_echo(f"""
        import jax
        import numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        def echo(secret):
            if int(secret) in (0, 1):
                return int(secret)
{body}
    """)
    assert report.verdict in (Verdict.WRONG_ANSWER, Verdict.RUNTIME_ERROR), describe(report)
    hidden = [t for t in report.tests if t.visibility == "hidden"]
    assert hidden and all(t.verdict is not Verdict.ACCEPTED for t in hidden), describe(report)
    assert_no_hidden_input_shown(report)
    for test in hidden:
        for number in (value[:4] for value in HIDDEN_INPUTS):  # the first digits, at least
            assert number not in test.message, (vector, test.message)
        assert "LEAK" not in test.message, (vector, test.message)


# -- 3. a layout is read from the array itself, and tampering is seen ---------------------

FAKE_LAYOUT = """
import jax, jax.numpy as jnp, numpy as np
from types import SimpleNamespace
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
CLAIM = NamedSharding(MESH, P("data", None))

def fake_shards(x):
    rows = x.shape[0] // 2
    return [SimpleNamespace(device=SimpleNamespace(id=d), index=(slice((d // 4) * rows, (d // 4 + 1) * rows), slice(None)),
                            data=np.zeros((rows,) + tuple(x.shape[1:]))) for d in range(8)]
"""

FORGERIES = {
    # The array's own class made to lie about its layout (the old encoder read these).
    "ArrayImpl properties": FAKE_LAYOUT + """
from jax._src.array import ArrayImpl
ArrayImpl.sharding = property(lambda self: CLAIM)
ArrayImpl.addressable_shards = property(lambda self: fake_shards(self))
""",
    "jax.Array properties": FAKE_LAYOUT + """
for cls in (jax.Array, type(jnp.zeros(1))):
    cls.sharding = property(lambda self: CLAIM)
    cls.addressable_shards = property(lambda self: fake_shards(self))
""",
    # The encoder's function replaced through sys.modules.
    "the encoder's layout function": FAKE_LAYOUT + """
import sys
codec = sys.modules["judge.harness.codec"]
def _sharding(value):
    return {"kind": "NamedSharding", "spec": ["data", None], "mesh_axes": ["data", "model"],
            "mesh_shape": [2, 4], "shards": [
                {"device": d, "shape": [value.shape[0] // 2, value.shape[1]],
                 "index": [[(d // 4) * (value.shape[0] // 2), (d // 4 + 1) * (value.shape[0] // 2)],
                           [0, value.shape[1]]]} for d in range(8)]}
codec._sharding = _sharding
""",
    "the encoder itself": FAKE_LAYOUT + """
import sys
sys.modules["judge.harness.codec"].make_encoder = lambda: (lambda value, **kw: {"t": "none"})
sys.modules["judge.harness.codec"].encode = lambda value, **kw: {"t": "none"}
""",
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forged_layout_is_not_believed_and_the_tampering_is_marked(
        catalog: Catalog, docker_sandbox: Sandbox, settings: Settings, forgery: str) -> None:
    # The array is not sharded at all (one device); the submission makes what the encoder
    # used to read say it is split over 'data'. Before the fix this was accepted.
    code = FORGERIES[forgery] + """
def shard_batch(x):
    return jnp.asarray(x)
"""
    report = grade(catalog.get("demo/sharded"), code, sandbox=docker_sandbox, settings=settings)
    assert report.verdict is Verdict.RUNTIME_ERROR, describe(report)
    assert report.interfered and report.message == INTERFERED, describe(report)
    assert all(t.verdict is Verdict.RUNTIME_ERROR for t in report.tests), describe(report)


def test_an_unsharded_array_is_wrong_without_any_tampering(
        catalog: Catalog, docker_sandbox: Sandbox, settings: Settings) -> None:
    # The control for the forgeries: the same array, no lies: a wrong answer, not marked.
    report = grade(catalog.get("demo/sharded"), FAKE_LAYOUT + """
def shard_batch(x):
    return jnp.asarray(x)
""", sandbox=docker_sandbox, settings=settings)
    assert report.verdict is Verdict.WRONG_ANSWER and not report.interfered, describe(report)
    assert "NamedSharding" in report.tests[0].message  # the sample says what is wrong


# -- 4. the protocol descriptor: bombs and poison ----------------------------------------

SPRAY = """
import os

def spray(data):
    # Every pipe and socket the process holds: the judge's channel is one of them.
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
            if target.startswith(("pipe:", "socket:")):
                os.write(int(name), data)
        except OSError:
            pass
"""


@pytest.mark.timeout(150)
def test_a_parse_bomb_on_the_protocol_descriptor_is_a_runtime_error(judge_echo: Judge) -> None:
    # An unterminated line of escaped quotes, 600 KB: the old parser's regex and depth
    # check were quadratic on it (7.8 s for 40 KB, tens of minutes here); now it is read
    # once, refused, and the test is the submission's runtime error.
    report = judge_echo(SPRAY + """
BOMB = b'{"event":"result","index":2,"status":"ok","time_ms":1,"stdout":"' + b'\\\\"' * 300_000 + b'\\n'

def echo(secret):
    if int(secret) not in (0, 1):
        spray(BOMB)
    return int(secret)
""")
    assert report.verdict is Verdict.RUNTIME_ERROR, describe(report)
    assert verdicts(report)[:3] == [Verdict.ACCEPTED, Verdict.ACCEPTED, Verdict.RUNTIME_ERROR]
    assert report.interfered and report.tests[2].message == INTERFERED, describe(report)


POISON = {
    # A 'loaded' line whose time is NaN: the old parser took it, and the report's
    # timings held NaN (invalid JSON, refused by PostgreSQL).
    "NaN while loading": ("load", b'{"event":"loaded","time_ms":NaN}\n'),
    "infinity while loading": ("load", b'{"event":"loaded","time_ms":1e999}\n'),
    # An ok result without a value: it used to become internal_error, which wins.
    "ok without a value": ("test", b'{"event":"result","index":2,"status":"ok","time_ms":1.0}\n'),
    "NaN value": ("test", b'{"event":"result","index":2,"status":"ok","time_ms":1.0,'
                          b'"value":{"t":"float","v":NaN}}\n'),
}


@pytest.mark.parametrize("poison", list(POISON))
def test_poisoned_lines_are_the_submissions_runtime_error(judge_echo: Judge,
                                                          poison: str) -> None:
    when, line = POISON[poison]
    report = judge_echo(SPRAY + f"""
LINE = {line!r}
if {when == "load"!r}:
    spray(LINE)

def echo(secret):
    if {when == "test"!r} and int(secret) not in (0, 1):
        spray(LINE)
    return int(secret)
""")
    assert report.verdict is Verdict.RUNTIME_ERROR, describe(report)
    assert report.interfered, describe(report)
    assert Verdict.INTERNAL_ERROR not in verdicts(report)
    # The report is plain JSON: storable in PostgreSQL, valid in the API.
    json.dumps(report.model_dump(mode="json"), allow_nan=False)
    if when == "test":
        assert verdicts(report)[:3] == [Verdict.ACCEPTED, Verdict.ACCEPTED,
                                        Verdict.RUNTIME_ERROR], describe(report)
