"""judge.scaffold: ``jaxjudge new``'s package, written whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from judge.catalog import Catalog
from judge.errors import UsageError
from judge.problem import VERDICT_DIRS
from judge.scaffold import ScaffoldError, entry_name, scaffold
from judge.verify import examples


def test_the_package_loads_and_files_one_example_under_every_verdict(tmp_path: Path) -> None:
    folder = scaffold(tmp_path, "course-a/softmax-rows")
    assert folder == tmp_path / "course-a" / "softmax-rows"
    problem = Catalog(tmp_path).get("course-a/softmax-rows")  # problem.yaml is valid
    assert problem.spec.entry_point.name == "softmax_rows"
    assert problem.spec.title == "Softmax rows"
    assert sorted({verdict for _, verdict in examples(problem)}) == sorted(VERDICT_DIRS)
    for path in folder.rglob("*"):
        assert "$" not in path.name and path.suffix != ".tmpl"
        if path.is_file():
            text = path.read_text()
            assert "$entry" not in text and "$title" not in text and "$seed" not in text
    assert "def softmax_rows(x)" in problem.reference_path.read_text()
    assert "def softmax_rows(x)" in problem.starter and "jnp.exp" not in problem.starter
    assert "`softmax_rows(x)`" in problem.statement


def test_a_title_with_yaml_syntax_is_kept_as_written(tmp_path: Path) -> None:
    title = 'Softmax: rows & "columns" # not a comment'
    folder = scaffold(tmp_path, "s/t", title)
    assert yaml.safe_load((folder / "problem.yaml").read_text())["title"] == title
    assert Catalog(tmp_path).get("s/t").spec.title == title


def test_seeds_differ_between_problems_and_are_stable(tmp_path: Path) -> None:
    def seed(problem_id: str, root: Path) -> int:
        return yaml.safe_load((scaffold(root, problem_id) / "problem.yaml").read_text())[
            "tests"]["seed"]

    assert seed("s/a", tmp_path / "1") == seed("s/a", tmp_path / "2")
    assert seed("s/a", tmp_path / "3") != seed("s/b", tmp_path / "3")


@pytest.mark.parametrize(("slug", "entry"), [
    ("softmax-rows", "softmax_rows"), ("2d-mesh", "solve_2d_mesh"), ("lambda", "solve_lambda"),
    ("for", "solve_for")])
def test_entry_names_are_python_identifiers(slug: str, entry: str) -> None:
    assert entry_name(slug) == entry
    assert entry.isidentifier()


@pytest.mark.parametrize("problem_id", [
    "softmax", "a/b/c", "A/b", "a/B", "-a/b", "a/-b", "a/b ", "../a", "a/..", "a/b_c", "a/b\n", ""])
def test_bad_ids_are_refused_and_nothing_is_written(tmp_path: Path, problem_id: str) -> None:
    with pytest.raises(ScaffoldError, match="not a problem id"):
        scaffold(tmp_path, problem_id)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("title", ["two\nlines", " ", "x" * 201])
def test_bad_titles_are_refused(tmp_path: Path, title: str) -> None:
    with pytest.raises(ScaffoldError, match="title"):
        scaffold(tmp_path, "s/t", title)
    assert not (tmp_path / "s" / "t").exists()


def test_an_existing_folder_is_never_touched(tmp_path: Path) -> None:
    mine = tmp_path / "s" / "t"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(ScaffoldError, match="exists already"):
        scaffold(tmp_path, "s/t")
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert issubclass(ScaffoldError, UsageError)  # the CLI's exit 2


def test_a_failed_write_leaves_no_package_and_no_staging(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = Path.write_text

    def fail_third(self: Path, *args: object, **kwargs: object) -> int:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", fail_third)
    with pytest.raises(OSError, match="No space"):
        scaffold(tmp_path, "s/t")
    assert [p.name for p in (tmp_path / "s").iterdir()] == []
