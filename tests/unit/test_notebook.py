"""judge.notebook: a notebook's code cells as one module, IPython syntax removed and
noted; anything that is not a notebook refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat import v3, v4

from judge.errors import SubmissionRejected
from judge.intake import Source
from judge.notebook import MAX_NOTES, convert_cell, read_notebook, source_from_upload
from judge.settings import Settings
from tests_support import FIXTURE_NOTEBOOKS

SETTINGS = Settings(max_code_bytes=2000, max_notebook_bytes=20_000)
NOTEBOOKS = FIXTURE_NOTEBOOKS


def notebook(*cells: nbformat.NotebookNode) -> bytes:
    return nbformat.writes(v4.new_notebook(cells=list(cells))).encode()


def code(*sources: str) -> bytes:
    return notebook(*(v4.new_code_cell(s) for s in sources))


def read(data: bytes) -> Source:
    return read_notebook(data, SETTINGS)


def compiles(source: str) -> None:
    compile(source, "<notebook>", "exec")


# -- what is kept ------------------------------------------------------------------------


def test_code_cells_are_kept_in_order_byte_for_byte_with_cell_markers() -> None:
    first = "import jax\r\nx = 'a'  # tab\there\n\n"
    second = "def f(x):\n    return x  # no newline at the end"
    src = read(notebook(v4.new_markdown_cell("# Title\n%not code"), v4.new_code_cell(first),
                        v4.new_raw_cell("!raw is ignored"), v4.new_code_cell(second)))
    assert src.code == f"# %% cell 2\n{first}\n# %% cell 4\n{second}\n"
    assert src.notes == ()
    compiles(src.code)


def test_outputs_and_execution_counts_are_ignored() -> None:
    cell = v4.new_code_cell("y = 2", execution_count=7)
    cell.outputs = [v4.new_output("stream", text="!printed\n%also printed")]
    assert read(notebook(cell)).code == "# %% cell 1\ny = 2\n"


# -- what is removed ---------------------------------------------------------------------


def test_line_magics_shell_escapes_and_help_become_pass_and_are_noted() -> None:
    source = ("%matplotlib inline\n"
              "!pip install flax\n"
              "!!ls -l\n"
              "files = !ls\n"
              "a, b.c = !echo 1 2\n"
              "t = %timeit -o f()\n"
              "jax.numpy?\n"
              "??jax\n"
              "?jax.jit\n"
              "x = 1  # is this help?\n")
    body, note = convert_cell(source)
    lines = body.splitlines()
    assert lines[:9] == ["pass  # jaxjudge: removed IPython magic",
                         "pass  # jaxjudge: removed shell escape",
                         "pass  # jaxjudge: removed shell escape",
                         "pass  # jaxjudge: removed shell escape",
                         "pass  # jaxjudge: removed shell escape",
                         "pass  # jaxjudge: removed IPython magic",
                         "pass  # jaxjudge: removed help request",
                         "pass  # jaxjudge: removed help request",
                         "pass  # jaxjudge: removed help request"]
    assert lines[9] == "x = 1  # is this help?"  # a ? in a comment is Python
    assert note == ("removed 2 IPython magics (lines 1, 6), 4 shell escapes (lines 2, 3, 4, 5), "
                    "3 help requests (lines 7, 8, 9)")
    compiles(body)


def test_a_magic_inside_a_block_leaves_a_valid_block_and_line_numbers_in_place() -> None:
    source = "def f(x):\n    %time y = x\n    return x\n"
    body, note = convert_cell(source)
    assert body == "def f(x):\n    pass  # jaxjudge: removed IPython magic\n    return x\n"
    assert note == "removed 1 IPython magic (line 2)"
    compiles(body)


def test_a_cell_magic_leaves_the_whole_cell_out() -> None:
    src = read(code("x = 1", "\n%%time\ndef solve(x):\n    return x\n", "%%!\nls"))
    assert "def solve" not in src.code
    assert src.code == ("# %% cell 1\nx = 1\n\n"
                        "# %% cell 2\n# jaxjudge: this cell was left out (a %%time cell)\n\n"
                        "# %% cell 3\n# jaxjudge: this cell was left out (a %% cell magic)\n")
    assert src.notes == ("cell 2: left out whole (a %%time cell: its body is not run)",
                         "cell 3: left out whole (a %% cell magic: its body is not run)")


@pytest.mark.parametrize("source", [
    's = """\n!not a shell\n%not a magic\nwhat?\n"""\n',
    "s = '''a\n%d'''\n",
    "x = (1 +\n%2)\n",
    "y = [1,\n!2]\n",
    "z = 1 + \\\n%3\n",
    "w = 'a\\\n%b'\n",
    "v = f\"{1}\" \\\n% 2\n",
    "u = r'\\'' + '''\n!x\n'''\n",
])
def test_magic_looking_lines_inside_strings_brackets_and_continuations_are_kept(source: str) -> None:
    body, note = convert_cell(source)
    assert body == source and note == ""


def test_a_removed_line_takes_its_backslash_continuations_with_it() -> None:
    body, note = convert_cell("!echo a \\\n  b \\\n  c\nx = 1\n")
    assert body == "pass  # jaxjudge: removed shell escape\n\n\nx = 1\n"
    assert note == "removed 1 shell escape (line 1)"


def test_get_ipython_calls_are_python_and_kept() -> None:
    source = "get_ipython().run_line_magic('matplotlib', 'inline')\n"
    assert convert_cell(source) == (source, "")


def test_notes_are_bounded_and_never_repeat_the_removed_text() -> None:
    secret = "%env TOKEN=hunter2"
    cells = [f"{secret}\n" * 9 for _ in range(MAX_NOTES + 5)]
    src = read_notebook(code(*cells, "x = 1"), Settings(max_notebook_bytes=100_000))
    assert len(src.notes) == MAX_NOTES + 1
    assert src.notes[0] == "cell 1: removed 9 IPython magics (lines 1, 2, 3, 4, 5, ...)"
    assert src.notes[-1] == "and 5 more cell(s) with removed lines"
    assert not any("hunter2" in note or "env" in note for note in src.notes)
    assert "hunter2" not in src.code


# -- versions and fixtures ---------------------------------------------------------------


def test_an_nbformat_3_notebook_is_read() -> None:
    nb = v3.new_notebook(worksheets=[v3.new_worksheet(cells=[
        v3.new_text_cell("markdown", source="words"),
        v3.new_code_cell(input="%load_ext autoreload\ndef solve(x):\n    return x"),
    ])])
    src = read(nbformat.writes(nb, version=3).encode())
    assert src.code == ("# %% cell 2\npass  # jaxjudge: removed IPython magic\n"
                        "def solve(x):\n    return x\n")
    assert src.notes == ("cell 2: removed 1 IPython magic (line 1)",)


def test_a_notebook_without_cell_ids_is_read_without_warnings(recwarn: pytest.WarningsRecorder) -> None:
    raw = json.loads(code("x = 1"))
    del raw["cells"][0]["id"]
    assert read(json.dumps(raw).encode()).code == "# %% cell 1\nx = 1\n"
    assert len(recwarn) == 0


@pytest.mark.parametrize("name", ["layout.ipynb", "layout-v3.ipynb"])
def test_the_fixture_notebooks_give_the_solution(name: str) -> None:
    src = read((NOTEBOOKS / name).read_bytes())
    namespace: dict[str, object] = {}
    exec(compile(src.code, name, "exec"), namespace)
    assert namespace["layout"](4, 16, 32) == [16, 8]  # type: ignore[operator]
    assert src.notes


def test_source_from_upload_reads_python_or_a_notebook_by_name() -> None:
    assert source_from_upload("a.py", b"x = 1\n", SETTINGS) == Source("x = 1\n")
    assert source_from_upload("A.IPYNB", code("x = 1"), SETTINGS).code == "# %% cell 1\nx = 1\n"
    with pytest.raises(SubmissionRejected, match="the file is not valid JSON"):
        source_from_upload("a.ipynb", b"x = 1\n", SETTINGS)


# -- refused -----------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "needle"), [
    (b"{\"cells\": [", "the notebook is not valid JSON (Expecting value: line 1 column 12)"),
    (b"def f(): pass", "the notebook is not valid JSON"),
    (b"[" * 10_000, "the notebook is nested more than 200 levels deep (at line 1 column 202)"),
    (b"\xff\xfe{}", "the notebook is not UTF-8 (byte 0)"),
    (b"[1, 2]", "the notebook is not a Jupyter notebook (JSON without an nbformat version)"),
    (b'{"cells": []}', "the notebook is not a Jupyter notebook"),
    (b'{"nbformat": "4"}', "the notebook is not a Jupyter notebook"),
    (b'{"nbformat": 9, "cells": []}', "the notebook is nbformat version 9, which is not one of"),
    (b'{"nbformat": 4, "nbformat_minor": 5, "cells": []}',
     "the notebook is not a valid Jupyter notebook ('metadata' is a required property)"),
    (b'{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [{"cell_type": "code"}]}',
     "the notebook is not a valid Jupyter notebook"),
    (notebook(v4.new_markdown_cell("only words")), "the notebook has no code cells with code"),
    (code("# a comment", "\n\n", "%pip install jax"), "the notebook has no code cells with code"),
    (code("x = '\0'"), "the code of the notebook contains NUL bytes"),
])
def test_what_is_not_a_notebook_is_refused_in_one_line(data: bytes, needle: str) -> None:
    with pytest.raises(SubmissionRejected) as refused:
        read(data)
    assert needle in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_notebook_and_its_code_are_bounded() -> None:
    big_output = v4.new_code_cell("x = 1")
    big_output.outputs = [v4.new_output("stream", text="." * 25_000)]
    with pytest.raises(SubmissionRejected, match=r"the notebook is \d+ bytes; the limit is 20000"):
        read(notebook(big_output))
    with pytest.raises(SubmissionRejected, match="the code of the notebook is 2[0-9]{3} bytes; "
                       "the limit is 2000 bytes"):
        read(code("x = 1\n" * 200, "y = 2\n" * 200))


def test_a_notebook_file_on_disk_can_be_large_where_code_cannot(tmp_path: Path) -> None:
    cell = v4.new_code_cell("def solve(x):\n    return x")
    cell.outputs = [v4.new_output("display_data", data={"image/png": "A" * 10_000})]
    data = notebook(cell)
    assert len(data) > SETTINGS.max_code_bytes
    assert read(data).code == "# %% cell 1\ndef solve(x):\n    return x\n"
