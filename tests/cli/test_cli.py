"""The ``jaxjudge`` command: outputs, exit codes and every error path."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from judge.cli import main
from judge.report import VerdictReport
from tests_support import FIXTURE_NOTEBOOKS, FIXTURE_PROBLEMS

CORRECT = "def layout(num_devices, kernel_in, kernel_out):\n    return [kernel_in, kernel_out // num_devices]\n"


@pytest.fixture(autouse=True)
def fixture_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXJUDGE_PROBLEMS_DIR", str(FIXTURE_PROBLEMS))


def jaxjudge(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 0), out, err


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("jaxjudge: error: ")
    for needle in needles:
        assert needle in lines[0]


def test_problems_lists_every_fixture(capsys) -> None:
    code, out, _ = jaxjudge(capsys, "problems")
    assert code == 0
    assert "demo/layout" in out and "demo/sharded" in out


def test_show_prints_statement_signature_and_samples_only(capsys) -> None:
    code, out, _ = jaxjudge(capsys, "show", "demo/layout")
    assert code == 0
    assert "Return the per-shard shape." in out
    assert "def layout(num_devices, kernel_in, kernel_out):" in out
    assert "four:" in out and "two:" in out
    assert "eight" not in out and "one:" not in out  # hidden tests stay hidden


def test_show_lists_each_probe_with_what_it_checks(capsys) -> None:
    code, out, _ = jaxjudge(capsys, "show", "demo/probed")
    assert code == 0
    probes = out[out.index("Probes"):out.index("Sample tests")]
    assert "gradient: jax.grad of the loss with respect to w" in probes
    assert "jax.grad (argnums w) of your function" in probes
    assert "jax.vmap (in_axes w=None, x=0) of your function" in probes
    assert "on a mesh (rows) of 8" in probes and "x P('rows', None)" in probes
    assert "at least 1 and at most 1 all-reduce over rows" in probes
    assert "at most 0 all-gather" in probes
    assert "temporaries memory per device at most 2 x the reference's on the same test " \
        "+ 1024 bytes" in probes
    assert "work per device at most 1.5 x the reference's" in probes
    assert "the program has no while" in probes
    # A problem without probes prints no such section.
    code, out, _ = jaxjudge(capsys, "show", "demo/layout")
    assert "Probes" not in out


@pytest.mark.slow
def test_grade_json_prints_the_report_alone_on_stdout(capsys, tmp_path: Path) -> None:
    code, out, err = jaxjudge(capsys, "grade", "demo/layout", write(tmp_path, "a.py", CORRECT.encode()),
                              "--format", "json")
    assert code == 0
    report = VerdictReport.model_validate(json.loads(out))
    assert report.verdict == "accepted" and report.problem == "demo/layout"
    assert report.sandbox == "zygote"  # an engine answers and make sandbox-image wrote its profile
    assert err == ""


@pytest.mark.slow
def test_grade_falls_back_to_process_with_a_warning_without_an_engine(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAXJUDGE_DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    code, out, err = jaxjudge(capsys, "grade", "demo/layout", write(tmp_path, "a.py", CORRECT.encode()),
                              "--format", "json")
    assert code == 0
    assert VerdictReport.model_validate(json.loads(out)).sandbox == "process"
    assert "does not isolate" in err  # the process sandbox warns, on stderr


def test_docker_without_an_engine_is_no_verdict_and_exit_1(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Asked for the container, the judge never falls back: no engine is a judge failure.
    monkeypatch.setenv("JAXJUDGE_DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    code, out, err = jaxjudge(capsys, "grade", "demo/layout",
                              write(tmp_path, "a.py", CORRECT.encode()), "--sandbox", "docker")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "no Docker engine answers" in err


@pytest.mark.parametrize(
    "name, value, words",
    [("JAXJUDGE_GRACE_SECONDS", "soon", "JAXJUDGE_GRACE_SECONDS"),
     ("JAXJUDGE_POOL_SIZE", "-17", "JAXJUDGE_POOL_SIZE"),
     ("JAXJUDGE_WEBHOOK_MAX_ATTEMPTS", "-29", "JAXJUDGE_WEBHOOK_MAX_ATTEMPTS")],
)
def test_a_bad_setting_is_a_one_line_error(capsys, monkeypatch: pytest.MonkeyPatch,
                                           name: str, value: str, words: str) -> None:
    monkeypatch.setenv(name, value)
    argv = ["keys", "list"] if "WEBHOOK" in name else ["problems"]  # the service's settings
    code, _, err = jaxjudge(capsys, *argv)
    assert_one_line_error(code, err, words)
    assert "Traceback" not in err and value not in err  # the value may be a password


def test_defaults_follow_the_working_directory_not_the_installation(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from judge.settings import Settings
    from service.settings import ServiceSettings

    monkeypatch.delenv("JAXJUDGE_PROBLEMS_DIR")
    monkeypatch.delenv("JAXJUDGE_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert Settings().problems_dir == tmp_path / "problemsets"
    assert ServiceSettings().database_url == f"sqlite:///{tmp_path}/var/jaxjudge.db"
    code, out, err = jaxjudge(capsys, "problems")  # no packages here: said, not an empty table
    assert out == ""
    assert_one_line_error(code, err, f"no problem packages under {tmp_path}/problemsets",
                          "JAXJUDGE_PROBLEMS_DIR")
    shutil.copytree(FIXTURE_PROBLEMS, tmp_path / "problemsets")
    code, out, _ = jaxjudge(capsys, "problems")
    assert code == 0 and "demo/layout" in out


def test_a_missing_sandbox_image_is_a_one_line_error(capsys, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXJUDGE_SANDBOX_IMAGE", "jaxjudge-no-such-image:0")
    code, _, err = jaxjudge(capsys, "grade", "demo/layout", write(tmp_path, "a.py", CORRECT.encode()),
                            "--sandbox", "docker")
    assert code == 1  # the judge's own environment is not ready: not the caller's input
    assert err.count("\n") == 1 and "is missing" in err and "make sandbox-image" in err


@pytest.mark.slow
def test_grade_text_is_a_table_and_exits_0_on_a_wrong_answer(capsys, tmp_path: Path) -> None:
    bad = "def layout(num_devices, kernel_in, kernel_out):\n    return [0, 0]\n"
    code, out, _ = jaxjudge(capsys, "grade", "demo/layout", write(tmp_path, "b.py", bad.encode()))
    assert code == 0
    assert "wrong_answer" in out and "four" in out and "expected:" in out


@pytest.mark.parametrize(
    ("problem", "needles"),
    [
        ("demo/layot", ["unknown problem 'demo/layot'", "demo/layout"]),
        ("other/layout", ["did you mean", "demo/layout"]),
        ("nothing-like-it", ["unknown problem"]),
    ],
)
def test_unknown_problem_names_close_matches(capsys, tmp_path: Path, problem: str,
                                             needles: list[str]) -> None:
    code, _, err = jaxjudge(capsys, "grade", problem, write(tmp_path, "a.py", CORRECT.encode()))
    assert_one_line_error(code, err, *needles)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\xff\xfe def", "not UTF-8"),
        (b"", "empty"),
        (b"   \n\n", "empty"),
        (b"x = 1\0", "NUL"),
        (b"#" * (256 * 1024 + 1), "the limit is 262144 bytes"),
    ],
)
def test_bad_files_are_refused(capsys, tmp_path: Path, data: bytes, needle: str) -> None:
    code, _, err = jaxjudge(capsys, "grade", "demo/layout", write(tmp_path, "bad.py", data))
    assert_one_line_error(code, err, needle)


def test_a_file_of_exactly_the_limit_is_accepted_for_grading(tmp_path: Path) -> None:
    from judge.intake import decode_code
    from judge.settings import Settings

    data = b"#" * (256 * 1024 - 1) + b"\n"
    assert decode_code(data, Settings()) == data.decode()


def test_missing_file_and_directory(capsys, tmp_path: Path) -> None:
    code, _, err = jaxjudge(capsys, "grade", "demo/layout", str(tmp_path / "nope.py"))
    assert_one_line_error(code, err, "no such file")
    code, _, err = jaxjudge(capsys, "grade", "demo/layout", str(tmp_path))
    assert_one_line_error(code, err, "not a regular file")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["grade", "demo/layout"], "Missing argument"),
        (["grade", "demo/layout", "x.py", "--format", "xml"], "'xml' is not one of"),
        (["grade", "demo/layout", "x.py", "--sandbox", "vm"], "unknown sandbox 'vm'"),
        (["frobnicate"], "No such command"),
        (["show"], "Missing argument"),
        (["build"], "Missing argument"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(capsys, tmp_path: Path, argv: list[str],
                                              needle: str) -> None:
    if "x.py" in argv:
        argv[argv.index("x.py")] = write(tmp_path, "x.py", CORRECT.encode())
    code, _, err = jaxjudge(capsys, *argv)
    assert_one_line_error(code, err, needle)


def test_show_unknown_problem(capsys) -> None:
    code, _, err = jaxjudge(capsys, "show", "demo/nope")
    assert_one_line_error(code, err, "unknown problem")


def test_tampered_test_data_is_refused_not_graded(capsys, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "problems"
    shutil.copytree(FIXTURE_PROBLEMS / "demo" / "layout", root / "demo" / "layout")
    hidden = next((root / "demo" / "layout" / "data" / "hidden").glob("*.json"))
    hidden.write_text(hidden.read_text().replace('"v": 5.0', '"v": 6.0'))
    monkeypatch.setenv("JAXJUDGE_PROBLEMS_DIR", str(root))
    code, _, err = jaxjudge(capsys, "grade", "demo/layout", write(tmp_path, "a.py", CORRECT.encode()))
    assert code == 1
    assert "does not match its hash" in err


def test_a_build_whose_reference_fails_reports_every_failure_at_once(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "problems"
    package = root / "demo" / "layout"
    shutil.copytree(FIXTURE_PROBLEMS / "demo" / "layout", package)
    (package / "reference.py").write_text(
        "def layout(num_devices, kernel_in, kernel_out):\n"
        "    if num_devices in (1.0, 8.0):\n"
        "        raise ValueError(f'no layout for {num_devices:g} devices')\n"
        "    return [int(kernel_in), int(kernel_out) // int(num_devices)]\n")
    # Two examples: one filed right, one misfiled (it is right, filed as wrong).
    for folder, name, code in [("accepted", "floor_division.py", CORRECT),
                               ("wrong_answer", "misfiled.py", CORRECT),
                               ("wrong_answer", "rows_split.py",
                                "def layout(num_devices, kernel_in, kernel_out):\n"
                                "    return [kernel_in // num_devices, kernel_out]\n")]:
        (package / "submissions" / folder).mkdir(parents=True, exist_ok=True)
        (package / "submissions" / folder / name).write_text(f"# {name}\n{code}")
    manifest = (package / "data" / "manifest.json").read_text()
    monkeypatch.setenv("JAXJUDGE_PROBLEMS_DIR", str(root))
    code, out, err = jaxjudge(capsys, "build", "demo/layout", "--sandbox", "process")
    assert code == 1
    assert "2 failures of the reference: the reference solution got error on test 'one': " \
        "ValueError: no layout for 1 devices" in err, err
    assert "\n  the reference solution got error on test 'eight': ValueError: no layout " \
        "for 8 devices" in err, err
    # And every example, checked on the tests the reference passed, in the same run.
    assert "the examples, on the 3 test(s) the reference passed:" in out, out
    assert "ok  demo/layout  submissions/accepted/floor_division.py: accepted" in out
    assert "ok  demo/layout  submissions/wrong_answer/rows_split.py: wrong_answer" in out
    assert ("FAIL  demo/layout  submissions/wrong_answer/misfiled.py: accepted (expected "
            "wrong_answer)") in out, out
    # Nothing was written: the package keeps the data it had.
    assert (package / "data" / "manifest.json").read_text() == manifest
    assert not list(package.glob("data.new*"))


@pytest.mark.slow
def test_build_then_verify_and_verify_catches_a_misfiled_example(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "problems"
    package = root / "demo" / "layout"
    shutil.copytree(FIXTURE_PROBLEMS / "demo" / "layout", package)
    shutil.rmtree(package / "data")
    monkeypatch.setenv("JAXJUDGE_PROBLEMS_DIR", str(root))

    code, _, err = jaxjudge(capsys, "grade", "demo/layout", write(tmp_path, "a.py", CORRECT.encode()))
    assert code == 1 and "jaxjudge build demo/layout" in err  # no data yet

    code, out, _ = jaxjudge(capsys, "build", "demo/layout")
    assert code == 0 and "5 tests" in out
    stored = sorted(p.name for p in (package / "data").rglob("*.json"))
    original = sorted(p.name for p in (FIXTURE_PROBLEMS / "demo/layout/data").rglob("*.json"))
    assert stored == original
    assert (package / "data" / "manifest.json").read_text() == (
        FIXTURE_PROBLEMS / "demo/layout/data/manifest.json").read_text()  # reproducible

    (package / "submissions" / "accepted").mkdir(parents=True)
    (package / "submissions" / "accepted" / "good.py").write_text(CORRECT)
    code, out, _ = jaxjudge(capsys, "verify", "demo/layout")
    assert code == 0, out
    assert "submissions/accepted/good.py: accepted" in out

    (package / "submissions" / "wrong_answer").mkdir()
    (package / "submissions" / "wrong_answer" / "not_wrong.py").write_text(CORRECT)
    code, out, _ = jaxjudge(capsys, "verify", "demo/layout")
    assert code == 1
    assert "FAIL" in out and "not_wrong.py: accepted (expected wrong_answer)" in out
    assert "not_wrong.py: accepted (expected wrong_answer)\n      every test accepted" in out

    # An example that fails names the test that decided it, and why.
    (package / "submissions" / "wrong_answer" / "not_wrong.py").unlink()
    (package / "submissions" / "accepted" / "good.py").write_text(
        CORRECT.replace("def layout(", "def _layout(") + "\n\ndef layout(*args):\n"
        "    return _layout(*args) if args[0] != 8 else None\n")
    code, out, _ = jaxjudge(capsys, "verify", "demo/layout")
    assert code == 1
    assert "good.py: wrong_answer (expected accepted)\n      test 'eight' (hidden): " \
        "wrong_answer: " in out, out


@pytest.mark.slow
def test_grade_a_notebook_says_what_was_removed(capsys, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = FIXTURE_NOTEBOOKS / "layout.ipynb"
    code, out, _ = jaxjudge(capsys, "grade", "demo/layout", str(notebook), "--format", "json",
                            "--sandbox", "process")
    assert code == 0
    report = VerdictReport.model_validate(json.loads(out))
    assert report.verdict == "accepted"
    assert report.source_notes == [
        "cell 2: removed 1 IPython magic (line 1), 1 shell escape (line 2)",
        "cell 4: left out whole (a %%time cell: its body is not run)",
        "cell 5: removed 1 help request (line 1)",
    ]
    code, out, _ = jaxjudge(capsys, "grade", "demo/layout", str(notebook), "--sandbox", "process")
    assert code == 0 and "From the notebook" in out and "cell 4: left out whole" in out


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"{not json", "bad.ipynb: the file is not valid JSON"),
        (b'{"cells": []}', "bad.ipynb: the file is not a Jupyter notebook"),
        (b'{"nbformat": 4, "nbformat_minor": 5, "cells": []}',
         "bad.ipynb: the file is not a valid Jupyter notebook"),
        (b"#" * (4 * 1024 * 1024 + 1), "the limit is 4194304 bytes"),
    ],
)
def test_bad_notebooks_are_refused(capsys, tmp_path: Path, data: bytes, needle: str) -> None:
    code, out, err = jaxjudge(capsys, "grade", "demo/layout", write(tmp_path, "bad.ipynb", data))
    assert_one_line_error(code, err, needle)
    assert out == ""


# -- jaxjudge new, and what verify reports as weak ----------------------------------------


@pytest.fixture
def problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "problems"
    monkeypatch.setenv("JAXJUDGE_PROBLEMS_DIR", str(root))
    return root


# Spends 0.6 s of CPU time before the scaffold reference's first line, on its one-row
# test only (one slow test makes a slow reference, and costs less to grade again).
SLOW_ON_ONE_ROW = ("    if x.shape[0] == 1:\n        end = time.process_time() + 0.6\n"
                   "        while time.process_time() < end:\n            pass\n    z = x -")


@pytest.mark.slow
def test_a_new_package_verifies_strictly_then_verify_names_its_weaknesses(
        capsys, problems: Path) -> None:
    code, out, err = jaxjudge(capsys, "new", "course-a/softmax-rows", "--title", "Row softmax")
    assert code == 0, err
    package = problems / "course-a" / "softmax-rows"
    assert "course-a/softmax-rows: 9 tests built" in out
    assert (package / "data" / "manifest.json").is_file()

    code, out, _ = jaxjudge(capsys, "verify", "--strict", "course-a/softmax-rows")
    assert code == 0, out
    for example in ["reference.py: accepted",
                    "accepted/jax_nn_softmax.py: accepted",
                    "wrong_answer/no_max_shift.py: wrong_answer",
                    "wrong_answer/columns_not_rows.py: wrong_answer",
                    "wrong_answer/row_max_in_a_loop.py: wrong_answer",
                    "runtime_error/axis_out_of_range.py: runtime_error",
                    "time_limit_exceeded/loops_forever.py: time_limit_exceeded",
                    "memory_limit_exceeded/allocates_too_much.py: memory_limit_exceeded",
                    "output_limit_exceeded/prints_too_much.py: output_limit_exceeded",
                    "compile_error/missing_colon.py: compile_error"]:
        assert example in out, out
    assert "weak" not in out and "all 1 problem(s) verified" in out
    # The limits' examples have no part in what follows (and each costs its limit again).
    for verdict in ("time_limit_exceeded", "memory_limit_exceeded", "output_limit_exceeded",
                    "compile_error"):
        shutil.rmtree(package / "submissions" / verdict)

    # Left with the wrong answer that only the large logits catch, and a reference that
    # uses 0.6 s of CPU time of the 5 s limit on its one-row test: still correct, but
    # weak. (Time is CPU time: a reference that slept would not be slow.) Without the
    # wrong answer that only the probe catches, the probe is not shown at work either.
    (package / "submissions" / "wrong_answer" / "columns_not_rows.py").unlink()
    (package / "submissions" / "wrong_answer" / "row_max_in_a_loop.py").unlink()
    reference = package / "reference.py"
    fast = reference.read_text()
    reference.write_text("import time\n" + fast.replace("    z = x -", SLOW_ON_ONE_ROW))
    code, out, _ = jaxjudge(capsys, "verify", "course-a/softmax-rows")
    assert code == 0, out
    assert ("5 of 7 hidden tests are passed by every wrong answer: one-row, one-column, "
            "square, tall, wide") in out
    slow = re.search(r"the reference takes (\d+\.\d\d) s of CPU time on test 'one-row', "
                     r"more than a tenth of the 5 s limit", out)
    assert slow and 0.6 <= float(slow[1]) < 5, out
    assert "one wrong_answer example: add a second mistake" in out
    assert "no wrong answer that only a probe catches" in out
    assert "4 weakness(es) to look at" in out
    code, out, _ = jaxjudge(capsys, "verify", "--strict", "course-a/softmax-rows")
    assert code == 1 and "4 weakness(es), and --strict" in out
    reference.write_text(fast)

    # Two wrong answers that fail exactly the same tests, and no runtime error example.
    wrong = package / "submissions" / "wrong_answer"
    (wrong / "no_max_shift_again.py").write_text(
        "# the same mistake, written differently\n" + (wrong / "no_max_shift.py").read_text())
    shutil.rmtree(package / "submissions" / "runtime_error")
    code, out, _ = jaxjudge(capsys, "verify", "course-a/softmax-rows")
    assert code == 0, out
    assert "all 2 wrong answers fail exactly the same tests" in out
    assert "no runtime_error example" in out
    assert "one wrong_answer example" not in out


def test_new_refuses_a_bad_id_or_an_existing_package_with_exit_2(capsys, problems: Path) -> None:
    code, _, err = jaxjudge(capsys, "new", "Course/X", "--no-build")
    assert code == 2 and err.startswith("jaxjudge: error: ") and "not a problem id" in err
    code, out, _ = jaxjudge(capsys, "new", "c/x", "--no-build")
    assert code == 0 and "jaxjudge build c/x" in out
    assert not (problems / "c" / "x" / "data").exists()
    code, _, err = jaxjudge(capsys, "new", "c/x", "--no-build")
    assert code == 2 and "exists already" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_reference_slow_once_is_measured_again_and_keeps_its_best_cpu_time(
        capsys, problems: Path) -> None:
    """CPU time is noisy on a loaded machine; a reference that crosses the bar in one
    grading and not in the next is not called slow (the best of the gradings counts),
    and one that stays slow still is."""
    from judge.catalog import Catalog
    from judge.sandbox import get_sandbox
    from judge.settings import Settings
    from judge.verify import REMEASURES, Check, grade, weaknesses

    code, _, err = jaxjudge(capsys, "new", "course-a/softmax-rows", "--title", "Row softmax")
    assert code == 0, err
    settings = Settings()
    problem = Catalog(problems).get("course-a/softmax-rows")
    fast = problem.reference_path.read_text()
    slow = "import time\n" + fast.replace("    z = x -", SLOW_ON_ONE_ROW)
    problem.reference_path.write_text(slow)
    sandbox = get_sandbox("process", settings)
    try:
        # The reference's check alone: the other weaknesses are not this test's business.
        first = grade(problem, slow, sandbox=sandbox, settings=settings)
        checks = [Check(problem.id, "reference.py", "accepted", first.verdict.value, first)]
        assert checks[0].ok
        bar = "more than a tenth of the 5 s limit"
        assert any(bar in w for w in weaknesses(problem, checks))  # one measure: slow

        gradings: list[str] = []

        def regrade(code: str) -> VerdictReport:
            gradings.append(code)
            return grade(problem, code, sandbox=sandbox, settings=settings)

        # Measured again, faster: no longer weak, after one more grading.
        assert not any(bar in w for w in weaknesses(problem, checks, lambda: regrade(fast)))
        assert gradings == [fast]
        # Measured again, still slow each time: weak, after every remeasure.
        gradings.clear()
        assert any(bar in w for w in weaknesses(problem, checks, lambda: regrade(slow)))
        assert gradings == [slow] * REMEASURES
    finally:
        sandbox.close()
