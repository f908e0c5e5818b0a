"""``jaxjudge similarity DIR|ZIP``: folders, zips, templates, JSON, and bad input (exit 2)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from similarity_class import COPIED, make_class

from judge.cli import main

PACKAGE = Path(__file__).parents[2] / "problemsets/jax-sharding/tensor-parallel-mlp"
STARTER = (PACKAGE / "starter.py").read_text()
A = "def f(a, b):\n    total = a * b + 3\n    for i in range(a):\n        total += i * b\n" \
    "    return total\n"
B = "def g(x, y):  # mine\n    s = x * y + 4\n    for j in range(x):\n        s += j * y\n" \
    "    return s\n"
C = "import os\nprint(os.listdir('.'))\nclass K:\n    pass\n"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(["similarity", *args])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_a_folder_prints_the_ranked_pairs_and_the_note(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    (tmp_path / "ann.py").write_text(A)
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "b.py").write_text(B)  # a folder is one student
    (tmp_path / "cy.py").write_text(C)
    (tmp_path / "notes.txt").write_text(A)  # not code: ignored
    code, out, _ = run(capsys, str(tmp_path))
    assert code == 0
    assert "a lead to check, not a verdict" in out
    assert "   1  100.0%  ann  bob  lines 1-5~1-5" in out
    assert "cy" not in out.split("clusters")[0].split("\n", 2)[2]


def test_a_template_takes_the_shared_code_out(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    for name, text in (("ann.py", A), ("bob.py", B), ("cy.py", C)):
        (tmp_path / name).write_text(text)
    (tmp_path.parent / "given.py").write_text(A)
    code, out, _ = run(capsys, str(tmp_path), "--template", str(tmp_path.parent / "given.py"),
                       "--json")
    assert code == 0
    answer = json.loads(out)
    assert answer["pairs"] == [] and answer["documents"] == 3
    assert "not a verdict" in answer["note"]


def test_a_zip_of_the_class_ranks_the_copies_first(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name, text in make_class(STARTER).items():
            z.writestr(f"{name}.py", text)
    code, out, _ = run(capsys, str(archive), "--problem", "jax-sharding/tensor-parallel-mlp",
                       "--top", "3", "--json", "--threshold", "0.99")
    assert code == 0, out
    answer = json.loads(out)
    assert {(p["a"], p["b"]) for p in answer["pairs"]} == {tuple(sorted(c)) for c in COPIED}
    assert answer["clusters"] == []


@pytest.mark.parametrize("setup, message", [
    (lambda p: p / "missing", "no such file or folder"),
    (lambda p: (p / "x.zip").write_bytes(b"PK not really") and p / "x.zip", "not a zip"),
    (lambda p: (p / "one.py").write_text(A) and p, "1 submission(s) found"),
    (lambda p: (p / "big.py").write_text("x = 1\n" * 100_000) and p, "the limit is"),
])
def test_bad_input_is_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           setup: object, message: str) -> None:
    target = setup(tmp_path)  # type: ignore[operator]
    code, _, err = run(capsys, str(target))
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_a_zip_too_deep_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "deep.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("/".join(["d"] * 20) + "/a.py", A)
        z.writestr("b.py", B)
    code, _, err = run(capsys, str(archive))
    assert code == 2 and "deep" in err
