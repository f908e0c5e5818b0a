"""Attacks on the grading itself: finding the expected outputs (they never enter the
sandbox), forging verdicts or protocol lines, leaving mid-test, patching the harness, and
values that lie about themselves. Expected values are compared on the trusted side, so
none of this may ever turn a hidden test the submission does not solve into ``accepted``.

Most attacks use security/vault, whose hidden answers no input reveals: an attack that
found them would return them and be accepted."""

from __future__ import annotations

import textwrap

import pytest

from judge.catalog import Catalog
from judge.report import VerdictReport
from judge.testdata import load_tests
from judge.verdict import Verdict

from .support import Judge, describe, facts, verdicts

pytestmark = pytest.mark.slow

RIGHT = "return [int(kernel_in), int(kernel_out) // int(num_devices)]"
SAMPLES_ONLY = [Verdict.ACCEPTED, Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.WRONG_ANSWER]
PUBLIC = "{0: 2, 1: 3}"  # the vault's sample answers, shown to every student


def assert_hidden_unsolved(report: VerdictReport) -> None:
    text = describe(report)
    assert report.verdict is not Verdict.ACCEPTED, text
    hidden = [t for t in report.tests if t.visibility == "hidden"]
    assert hidden and all(t.verdict is not Verdict.ACCEPTED for t in hidden), text
    assert report.score == 0, text


def test_expected_values_are_nowhere_in_the_sandboxs_memory(judge_vault: Judge) -> None:
    # From inside the call: the caller's frames (the harness's locals, the job), every
    # object the garbage collector knows, every module, standard input and every readable
    # descriptor, the environment, and finally all readable memory of the process.
    report = judge_vault(f"""
        import json, os, sys, time

        ANSWERS, SEEN = {{}}, {{}}

        def frames():
            names, frame = [], sys._getframe(1)
            while frame is not None:
                names.append(frame.f_code.co_name)
                frame = frame.f_back
            return names

        def descriptors():
            read = {{}}
            for fd in sorted(map(int, os.listdir("/proc/self/fd"))):
                target = os.readlink(f"/proc/self/fd/{{fd}}") if os.path.lexists(f"/proc/self/fd/{{fd}}") else ""
                if target.startswith(("pipe:", "socket:", "anon_inode:")):
                    read[fd] = target  # the judge's channel: write-only for us, and live
                    continue
                try:
                    data = os.pread(fd, 1 << 24, 0)
                    ANSWERS.update(SEARCH(data))
                    read[fd] = f"{{target}} {{len(data)}} bytes"
                except OSError as exc:
                    read[fd] = f"{{target}} {{exc.strerror}}"
            read["stdin"] = repr(sys.stdin.read())
            return read

        def find(name):  # the harness's locals: the load message and this test's
            frame = sys._getframe()
            while frame is not None:
                if isinstance(frame.f_locals.get(name), dict):
                    return frame.f_locals[name]
                frame = frame.f_back

        def vault(key):
            if not SEEN:
                t0 = time.monotonic()
                job, test = find("job"), find("test")
                SEEN["frames"] = frames()
                SEEN["test keys"] = sorted(test) if test else None
                SEEN["job keys"] = sorted(job) if job else None
                SEEN["objects"], found = SCAN_OBJECTS()  # stacks, heap, modules
                ANSWERS.update(found)
                SEEN["modules"] = len(sys.modules)
                SEEN["descriptors"] = descriptors()
                ANSWERS.update(SEARCH(repr(dict(os.environ))))
                ANSWERS.update(SEARCH(open("/proc/self/environ", "rb").read()))
                ANSWERS.update(SEARCH(open("/proc/self/cmdline", "rb").read()))
                SEEN["memory"], found = SCAN_MEMORY()
                ANSWERS.update(found)
                SEEN["answers"] = sorted(ANSWERS)
                SEEN["seconds"] = round(time.monotonic() - t0, 1)
                print("@@", json.dumps(SEEN))
            return ANSWERS.get(key, {PUBLIC}.get(key, 0))
    """)
    seen = facts(report)
    assert seen.get("answers") == [], describe(report)
    assert verdicts(report) == SAMPLES_ONLY, describe(report)
    assert_hidden_unsolved(report)
    # The search reached what it meant to: the harness's frames and its job (inputs only),
    # the heap, the modules, the descriptors and hundreds of MiB of memory.
    assert "main" in seen["frames"], seen["frames"]
    # The load message holds the code and a count of tests; a test message, its inputs.
    assert seen["job keys"] == ["alarms", "code", "entry_point", "limits", "mode", "op",
                                "tests"], seen
    # No "expected" (export and program: a probe's requests, none in this problem).
    assert seen["test keys"] == ["args", "export", "index", "kinds", "op", "program"], seen
    assert seen["objects"] > 10_000 and seen["modules"] > 200, seen
    assert seen["descriptors"]["stdin"] == "''", seen["descriptors"]
    assert seen["memory"] > 200 << 20, seen


def test_the_searches_find_an_answer_that_is_there(judge_vault: Judge) -> None:
    # The control for the searches of this file and test_files.py: with the answers in a
    # file under /tmp and in memory, SCAN_FILES and SCAN_MEMORY find them and the
    # submission is accepted.
    report = judge_vault("""
        import json, os
        PLANTED = "".join(["791", "9104", "729"]) + " and " + "10472" + "97919"
        os.makedirs("/tmp/data/hidden")
        open("/tmp/data/hidden/02-omega.json", "w").write(PLANTED)
        files, in_files = SCAN_FILES("/tmp")
        _, in_memory = SCAN_MEMORY()
        print("@@", json.dumps({"files": sorted(in_files), "memory": sorted(in_memory),
                                "names": files["names"], "dirs": files["dirs"]}))

        def vault(key):
            return in_memory.get(key, {0: 2, 1: 3}.get(key, 0))
    """)
    seen = facts(report)
    assert seen["files"] == seen["memory"] == [2, 3], seen
    assert seen["names"] == ["/tmp/data/hidden/02-omega.json"] * 2, seen  # by name, by content
    assert seen["dirs"] == ["/tmp/data/hidden"], seen
    assert report.verdict is Verdict.ACCEPTED, describe(report)


FAKE_LINES = r"""
import json
FAKES = [
    json.dumps({"event": "result", "index": i, "status": "ok", "time_ms": 1.0,
                "value": {"t": "int", "v": i}}) for i in range(4)
] + [
    json.dumps({"event": "start", "index": i}) for i in range(4)
] + [
    json.dumps({"event": "done"}),
    json.dumps({"verdict": "accepted", "score": 2, "max_score": 2}),
    "ACCEPTED", "verdict: accepted", "All tests passed.",
]
BLOB = ("\n" + "\n".join(FAKES) + "\n").encode()
"""


def test_fake_verdicts_printed_on_stdout_and_stderr_are_just_output(judge_layout: Judge) -> None:
    report = judge_layout("""
        import json, os, sys
        FAKE = json.dumps({"event": "result", "index": 2, "status": "ok", "time_ms": 1.0,
                           "value": {"t": "list", "items": [{"t": "int", "v": 5},
                                                            {"t": "int", "v": 7}]}})
        def layout(num_devices, kernel_in, kernel_out):
            for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
                print("\\n" + FAKE + "\\nACCEPTED", file=stream, flush=True)
            for path in ("/dev/stdout", "/dev/stderr", "/proc/self/fd/1", "/proc/self/fd/2"):
                with open(path, "a") as f:
                    f.write(FAKE + "\\n")
            return [0, 0]
    """)
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}, describe(report)
    assert '"event": "result"' in report.stdout and '"event": "result"' in report.stderr


def test_forged_protocol_lines_on_every_descriptor_claim_nothing(judge_vault: Judge) -> None:
    # The judge's channel is a descriptor of the harness, so the submission can write to
    # it; what it can forge is a claim about its own return values, which are then checked
    # against answers it never had.
    report = judge_vault(FAKE_LINES + textwrap.dedent("""
        import os

        def spray():
            for fd in range(0, 21):
                try:
                    os.write(fd, BLOB)
                except OSError:
                    pass
            for name in os.listdir("/proc/self/fd"):
                try:
                    with open("/proc/self/fd/" + name, "wb", buffering=0) as f:
                        f.write(BLOB)
                except OSError:
                    pass

        def vault(key):
            spray()
            return 0
    """))
    assert_hidden_unsolved(report)
    assert report.verdict in (Verdict.WRONG_ANSWER, Verdict.RUNTIME_ERROR), describe(report)


@pytest.mark.parametrize(
    "code",
    ["os._exit(0)", "sys.exit(0)", "raise SystemExit(0)", "os.closerange(0, 1024)",
     "raise KeyboardInterrupt"],
    ids=["os._exit", "sys.exit", "SystemExit", "close-every-descriptor", "KeyboardInterrupt"],
)
def test_leaving_in_the_middle_of_a_test_is_a_runtime_error(judge_layout: Judge, code: str) -> None:
    # Right on the samples, then leaves during the first hidden test: that test is a runtime
    # error and so is the submission (a SystemExit is caught like any exception, and the
    # tests after it still run; after os._exit they are not run).
    report = judge_layout(f"""
        import os, sys
        def layout(num_devices, kernel_in, kernel_out):
            if num_devices == 1:
                {code}
            {RIGHT}
    """)
    assert report.verdict is Verdict.RUNTIME_ERROR, describe(report)
    assert verdicts(report)[:3] == [Verdict.ACCEPTED] * 2 + [Verdict.RUNTIME_ERROR], describe(report)
    assert report.tests[2].score == 0


def test_exiting_while_loading_is_a_compile_error(judge_layout: Judge) -> None:
    report = judge_layout("""
        import sys
        def layout(num_devices, kernel_in, kernel_out):
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
        sys.exit(0)
    """)
    assert report.verdict is Verdict.COMPILE_ERROR, describe(report)
    assert set(verdicts(report)) == {Verdict.COMPILE_ERROR}


PATCHES = {
    # name: (the patch, whether the harness notices it). Each tries to make every result
    # say the public answers or ok; what the encoder and the protocol writer use is bound
    # before the submission loads, so none of them changes what is sent, and a patch of
    # the harness or of what it watches ends the run as interference.
    "codec.encode": ("codec.encode = lambda value, **kw: {'t': 'int', 'v': 2}", True),
    "codec.make_encoder": ("codec.make_encoder = lambda: lambda value, **kw: {'t': 'int', 'v': 2}",
                           True),
    "codec.encode nan": ("codec.encode = lambda value, **kw: {'t': 'float', 'v': 'nan'}", True),
    # json.dumps: every line the harness sends says ok, with an empty array.
    "json.dumps": ("""
original = json.dumps
def dumps(obj, *args, **kw):
    if isinstance(obj, dict) and obj.get("event") == "result":
        obj = dict(obj, status="ok", value={"t": "array", "dtype": "int64", "shape": [0], "data": ""})
        obj.pop("error", None)
    return original(obj, *args, **kw)
json.dumps = dumps
""", True),
    # NumPy: every array is turned into the public answers. NumPy is not watched, and the
    # encoder's own np.asarray was bound before: the values are read as they are.
    "numpy.asarray": ("""
original = numpy.asarray
numpy.asarray = lambda *a, **kw: original([2, 3, 2, 3])
""", False),
    # The harness's protocol writer, rebound through its closure: every result said ok.
    "the sender's closure": ("""
import gc, os
def forge(fd, data, write=os.write):
    if b'"event":"result"' in bytes(data):
        line = json.loads(bytes(data))
        line.update(status="ok", value={"t": "int", "v": 2})
        line.pop("error", None)
        data = (json.dumps(line) + "\\n").encode()
    write(fd, data)
    return len(data)
for fn in gc.get_objects():
    if type(fn).__name__ == "function" and fn.__qualname__ == "make_sender.<locals>.send":
        for cell in fn.__closure__:
            if cell.cell_contents is os.write:
                cell.cell_contents = forge
""", True),
    # The harness's alarm wrapper: calls skipped, every value replaced by True.
    "runner.timed": ("runner.timed = lambda seconds, fn, *args: True if fn is not exec else fn(*args)",
                      True),
}


@pytest.mark.parametrize("target", list(PATCHES))
def test_patching_the_harness_claims_nothing(judge_vault: Judge, target: str) -> None:
    patch, noticed = PATCHES[target]
    report = judge_vault(f"""
import json, numpy
from judge.harness import codec, runner
{patch}
def vault(key):
    return numpy.int64({{0: 2, 1: 3}}.get(key, 0))
""")
    assert_hidden_unsolved(report)
    if noticed:
        assert report.verdict is Verdict.RUNTIME_ERROR and report.interfered, describe(report)
        assert report.message == "the submission interfered with the judge"
    else:
        assert report.verdict is Verdict.WRONG_ANSWER and not report.interfered, describe(report)
        assert verdicts(report) == SAMPLES_ONLY, describe(report)


@pytest.mark.parametrize(
    "liar",
    [
        # Always equal, to anything.
        """
class Liar:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = object.__hash__
LIAR = Liar()
""",
        # An int that says it is every int.
        """
class Liar(int):
    def __eq__(self, other): return True
    __hash__ = int.__hash__
LIAR = Liar(0)
""",
        # A NumPy array whose every view of itself says something else.
        """
import numpy as np
class Liar(np.ndarray):
    def __eq__(self, other): return np.ones(np.shape(other), bool)
    def __array__(self, *a, **kw): return np.asarray(42)
    def tolist(self): return 42
    def item(self, *a): return 42
    def view(self, *a, **kw): return np.asarray(42)
    def astype(self, *a, **kw): return np.asarray(42)
    def tobytes(self, *a, **kw): return b"lies"
    def __int__(self): return 1
LIAR = np.asarray(0).view(Liar)
""",
        # A str that looks like a number.
        """
class Liar(str):
    def __eq__(self, other): return True
    __hash__ = str.__hash__
LIAR = Liar("7919")
""",
    ],
    ids=["always-equal", "int-subclass", "ndarray-subclass", "str-subclass"],
)
def test_values_that_lie_about_themselves_are_wrong(judge_vault: Judge, liar: str) -> None:
    report = judge_vault(liar + """
def vault(key):
    return LIAR
""")
    assert verdicts(report) == [Verdict.WRONG_ANSWER] * 4, describe(report)
    assert_hidden_unsolved(report)


def test_an_ndarray_subclass_is_read_by_its_buffer(judge_layout: Judge) -> None:
    report = judge_layout("""
        import numpy as np
        class Liar(np.ndarray):
            def __eq__(self, other): return np.ones(np.shape(other), bool)
            def __array__(self, *a, **kw): return np.array(self.claim)
            def tolist(self): return list(self.claim)
            def view(self, *a, **kw): return np.array(self.claim)
            def __getitem__(self, i): return self.claim[i]
            def __iter__(self): return iter(self.claim)
        def layout(num_devices, kernel_in, kernel_out):
            liar = np.zeros(2, dtype=np.int32).view(Liar)
            liar.claim = [int(kernel_in), int(kernel_out) // int(num_devices)]
            return liar
    """)
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}
    assert "got 0" in report.tests[0].message, describe(report)  # its real bytes


def test_lying_about_the_time_does_not_stretch_the_limit(judge_layout: Judge) -> None:
    # Asleep far past the wall-clock net (3 x 2 s, + grace): the supervisor ends it.
    report = judge_layout(f"""
        import signal, time
        def layout(num_devices, kernel_in, kernel_out):
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            signal.signal(signal.SIGPROF, signal.SIG_IGN)
            frozen = time.perf_counter()
            time.perf_counter = lambda: frozen  # the harness times the call with this
            if num_devices == 8:
                time.sleep(10)
            {RIGHT}
    """)
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED, describe(report)
    assert report.tests[3].verdict is Verdict.TIME_LIMIT_EXCEEDED, describe(report)


def test_lying_about_the_time_within_the_grace_is_still_a_time_limit(judge_layout: Judge) -> None:
    # 2.6 s of CPU time against a 2 s limit, with the harness's clocks frozen and its
    # alarms ignored: within the supervisor's hard limit (limit + grace, 3 s), so only the
    # judge's own count of the sandbox's CPU time (less a small allowance for decoding and
    # encoding) catches it; the harness's reported time_ms is not believed.
    report = judge_layout(f"""
        import signal, time
        def layout(num_devices, kernel_in, kernel_out):
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            signal.signal(signal.SIGPROF, signal.SIG_IGN)
            clock = time.process_time
            frozen = time.perf_counter()
            time.perf_counter = lambda: frozen
            time.process_time = lambda: 0.0
            if num_devices == 8:
                end = clock() + 2.6
                while clock() < end:
                    pass
            {RIGHT}
    """)
    assert report.tests[3].verdict is Verdict.TIME_LIMIT_EXCEEDED, describe(report)
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED, describe(report)


LEAK_VECTORS = {
    "stdout": "print(tag)\nreturn [0, 0]",
    "stderr": "print(tag, file=sys.stderr)\nreturn [0, 0]",
    "exception message": "raise ValueError(tag)",
    "SystemExit message": "sys.exit(tag)",
    # The exception's type name is the submission's to choose: a hidden test's message
    # never shows it (it would read "LEAK_1_5_7 raised").
    "exception type name": "raise type(tag.replace('-', '_'), (Exception,), {})()",
    # The harness's EncodeLimit, raised by the submission with its own text, becomes an
    # output limit: a hidden test's message is the fixed sentence, not the text.
    "EncodeLimit message": "from judge.harness.codec import EncodeLimit\nraise EncodeLimit(tag)",
    # Code compiled under the name submission.py could put any line number in an error
    # ("ValueError raised (line 157)"): a hidden test's message holds no line number.
    "line number": "exec(compile('\\n' * (code - 1) + 'raise ValueError()', 'submission.py', 'exec'))",
    # The harness times the call with time.perf_counter, which the submission can
    # replace; a hidden test's time_ms is the supervisor's own clock, never that (157.0).
    "time": "start = sys._getframe(3).f_locals['t']\n"
            "time.perf_counter = lambda: start + code / 1000\nreturn [0, 0]",
}


@pytest.mark.parametrize("vector", list(LEAK_VECTORS))
def test_hidden_inputs_never_reach_the_report(judge_layout: Judge, catalog: Catalog,
                                              vector: str) -> None:
    # A hidden test shows its verdict, its time and a message naming the kind of failure,
    # "never an input" (docs/architecture.md). The submission tries to smuggle each hidden
    # test's inputs out: as text ("LEAK-1-5-7") and as a number (100 n + 10 a + b = 157).
    body = textwrap.indent(LEAK_VECTORS[vector], " " * 12)
    report = judge_layout(f"""
        import sys, time
        def layout(num_devices, kernel_in, kernel_out):
            n, a, b = int(num_devices), int(kernel_in), int(kernel_out)
            tag, code = f"LEAK-{{n}}-{{a}}-{{b}}", 100 * n + 10 * a + b
            if (n, a, b) in ((4, 16, 32), (2, 3, 10)):  # the samples: public, solved
                return [a, b // n]
{body}
    """)
    assert report.verdict is not Verdict.ACCEPTED, describe(report)
    stored = load_tests(catalog.get("demo/layout"))
    leaks = []
    for test, result in zip(stored, report.tests, strict=True):
        if test.visibility != "hidden":
            continue
        n, a, b = (int(test.args[k]["v"]) for k in ("num_devices", "kernel_in", "kernel_out"))
        tag, code = f"LEAK-{n}-{a}-{b}", 100 * n + 10 * a + b
        shown = " ".join([result.message, report.stdout, report.stderr, report.message])
        if tag in shown or tag.replace("-", "_") in shown:
            leaks.append(f"{test.name}: {tag} in {result.message!r}")
        if f"line {code}" in result.message:
            leaks.append(f"{test.name}: the line number {code} in {result.message!r}")
        if abs(result.time_ms - code) < 0.5:
            leaks.append(f"{test.name}: time_ms {result.time_ms} encodes {code}")
    assert not leaks, f"hidden inputs leaked through the {vector}: {leaks}"
