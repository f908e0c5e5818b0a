"""Jupyter notebooks (``.ipynb``) as submissions: the code cells, in order, as one module.

What is taken from a notebook:

* Only code cells, in notebook order; markdown and raw cells and every output are
  ignored. Each code cell is preceded by a marker line ``# %% cell N`` (N counts every
  cell of the notebook from 1, markdown included: the position a student finds by
  scrolling) and cells are separated by a blank line, so a line number in a traceback
  points into the converted module, and the marker above it names the cell. ``# %%`` is
  the cell marker editors (VS Code, Spyder, Jupytext) already understand.
* Everything else is kept byte for byte, except IPython's own syntax, which is not
  Python and would not compile. At the start of a statement (not inside a string, a
  bracket or a backslash continuation; strings are followed with a small lexer that
  treats f-strings as plain strings):

  - a cell whose first non-blank line starts with ``%%`` (a cell magic: ``%%time``,
    ``%%writefile``, ...) is left out whole, body included;
  - a line magic ``%name ...``, also assigned (``t = %timeit -o f()``);
  - a shell escape ``!cmd`` or ``!!cmd``, also assigned (``files = !ls``);
  - a help request: ``?name``, ``??name``, ``name?``, ``name??``.

  A removed line is replaced by ``pass`` at its own indentation with a comment saying
  what was removed (so a magic inside an ``if`` leaves a valid block, and the line
  numbers within the cell do not move); lines joined to it by a trailing backslash
  become blank. Plain Python is never touched: ``get_ipython()`` calls (which nbconvert
  writes for magics) are kept and fail at load, where ``get_ipython`` is not defined;
  a variable assigned from a removed escape is not defined either.
* The report says what was removed, in notes made of fixed words, the cell's number and
  line numbers within the cell (never the removed text): at most ``MAX_NOTES`` notes.

Bounds: the notebook file is at most ``Settings.max_notebook_bytes`` (outputs such as
plots make notebooks much larger than their code), JSON nested at most
:data:`judge.nesting.MAX_DEPTH` (200) levels (read by :func:`judge.nesting.load_json`,
which never recurses on the C stack; nbformat's schema check recurses in Python and
failed at about 400 levels of metadata); the converted code is then checked as any
submitted code is (:func:`judge.intake.decode_code`: ``max_code_bytes``, UTF-8, not
empty, no NUL bytes).

A file that is not UTF-8, not JSON, not a notebook (no ``nbformat`` version nbformat
reads, or failing nbformat's schema, extra properties allowed) or holds no code raises
:class:`~judge.errors.SubmissionRejected` with a one-line reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import nbformat
from nbformat.validator import normalize

from judge.errors import SubmissionRejected
from judge.intake import Source, decode_code
from judge.nesting import TooDeep, load_json
from judge.settings import Settings

NOTEBOOK_SUFFIX = ".ipynb"
MAX_NOTES = 20  # notes in a report; past it, one more note counts the cells left unsaid
MAX_LINES_SHOWN = 5  # line numbers listed per kind in a note
_LINES = re.compile(r".*?(?:\r\n|\r|\n)|.+", re.S)  # Python's own newlines, kept
_NAME = r"[^\W\d]\w*(?:\.[^\W\d]\w*)*"
_ASSIGNED = re.compile(rf"{_NAME}(?:\s*,\s*{_NAME})*\s*=\s*([!%])")
_CELL_MAGIC = re.compile(r"%%([A-Za-z_]\w{0,39})\b")
PLACEHOLDERS = ("#", "pass  # jaxjudge:")  # comments, and what stands for a removed line
KINDS = {"magic": ("IPython magic", "IPython magics"),
         "shell": ("shell escape", "shell escapes"),
         "help": ("help request", "help requests")}


def is_notebook(filename: str) -> bool:
    return filename.lower().endswith(NOTEBOOK_SUFFIX)


def source_from_upload(filename: str, data: bytes, settings: Settings,
                       noun: str = "the file") -> Source:
    """An uploaded file as a :class:`Source`: a ``.ipynb`` file is read as a notebook,
    anything else as Python source. :class:`SubmissionRejected` says why not."""
    if is_notebook(filename):
        return read_notebook(data, settings, noun=noun)
    return Source(decode_code(data, settings, noun=noun))


def read_notebook(data: bytes, settings: Settings, noun: str = "the notebook") -> Source:
    """The code of the notebook file ``data`` and the notes on what was removed."""
    limit = settings.max_notebook_bytes
    if len(data) > limit:
        raise SubmissionRejected(f"{noun} is {len(data)} bytes; the limit is {limit} bytes")
    cells = _code_cells(_parse(data, noun))
    parts: list[str] = []
    notes: list[str] = []
    unsaid = 0
    kept = False  # a line of the student's own besides comments
    for number, source in cells:
        body, note = convert_cell(source)
        if body and not body.endswith(("\n", "\r")):
            body += "\n"
        parts.append(f"# %% cell {number}\n{body}")
        kept = kept or any(line.strip() and not line.lstrip().startswith(PLACEHOLDERS)
                           for line in body.splitlines())
        if note:
            if len(notes) < MAX_NOTES:
                notes.append(f"cell {number}: {note}")
            else:
                unsaid += 1
    if unsaid:
        notes.append(f"and {unsaid} more cell(s) with removed lines")
    if not kept:
        raise SubmissionRejected(f"{noun} has no code cells with code in them")
    code = decode_code("\n".join(parts).encode("utf-8", "surrogatepass"), settings,
                       noun=f"the code of {noun}")
    return Source(code, tuple(notes))


def _parse(data: bytes, noun: str) -> Any:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SubmissionRejected(f"{noun} is not UTF-8 (byte {exc.start})") from None
    try:
        raw = load_json(text)
    except json.JSONDecodeError as exc:
        raise SubmissionRejected(f"{noun} is not valid JSON ({exc.msg}: line {exc.lineno} "
                                 f"column {exc.colno})") from None
    except TooDeep as exc:
        raise SubmissionRejected(f"{noun} is {exc}; a notebook is only a few levels "
                                 "deep") from None
    except ValueError:
        raise SubmissionRejected(f"{noun} is not valid JSON") from None
    major = raw.get("nbformat") if isinstance(raw, dict) else None
    if not isinstance(major, int) or isinstance(major, bool):
        raise SubmissionRejected(f"{noun} is not a Jupyter notebook (JSON without an "
                                 "nbformat version)")
    if major not in nbformat.versions:
        raise SubmissionRejected(f"{noun} is nbformat version {major}, which is not one "
                                 f"of {', '.join(map(str, sorted(nbformat.versions)))}")
    try:
        if major >= 3:  # the versions nbformat has a schema for
            _name_cells(raw)
            _, raw = normalize(raw, relax_add_props=True)
            nbformat.validate(raw, relax_add_props=True)
        nb = nbformat.versions[major].to_notebook_json(raw, minor=raw.get("nbformat_minor", 0))
        return nbformat.convert(nb, 4)
    except nbformat.ValidationError as exc:
        raise SubmissionRejected(f"{noun} is not a valid Jupyter notebook "
                                 f"({_one_line(getattr(exc, 'message', exc))})") from None
    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
        raise SubmissionRejected(f"{noun} is not a valid Jupyter notebook "
                                 f"({type(exc).__name__}: {_one_line(exc)})") from None


def _name_cells(raw: dict[str, Any]) -> None:
    """Give cells without an id one (nbformat 4.5 requires them; older writers and some
    tools leave them out, which nbformat repairs with a warning)."""
    cells = raw.get("cells")
    if raw.get("nbformat") == 4 and isinstance(cells, list):
        for number, cell in enumerate(cells, 1):
            if isinstance(cell, dict) and "id" not in cell:
                cell["id"] = f"jaxjudge-cell-{number}"


def _one_line(message: object) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= 160 else text[:160] + "..."


def _code_cells(nb: Any) -> list[tuple[int, str]]:
    """(position from 1 among all cells, source) of each code cell."""
    cells = []
    for number, cell in enumerate(nb.get("cells", []), 1):
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            cells.append((number, source if isinstance(source, str) else "".join(source)))
    return cells


@dataclass
class _Lex:
    """Where a line starts: inside a string (its closing quote), brackets, or a
    backslash continuation."""

    quote: str | None = None
    depth: int = 0
    continued: bool = False

    @property
    def at_statement(self) -> bool:
        return self.quote is None and self.depth == 0 and not self.continued

    def scan(self, text: str) -> int:
        """Advance over one line (without its newline); where its comment starts."""
        i, n, comment = 0, len(text), len(text)
        self.continued = False
        escaped_newline = False
        while i < n:
            c = text[i]
            if self.quote is not None:
                if c == "\\":
                    escaped_newline = i == n - 1
                    i += 2
                elif text.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                else:
                    i += 1
                continue
            if c == "#":
                comment = i
                break
            if c in "'\"":
                self.quote = c * 3 if text.startswith(c * 3, i) else c
                i += len(self.quote)
                continue
            if c == "\\" and i == n - 1:
                self.continued = True
            elif c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(self.depth - 1, 0)
            i += 1
        if self.quote is not None and len(self.quote) == 1 and not escaped_newline:
            self.quote = None  # an unterminated string: Python's error, not ours to follow
        return comment


def _kind(text: str) -> str | None:
    """What IPython syntax the statement-starting line ``text`` is, if any."""
    stripped = text.lstrip()
    if stripped[:1] == "%":
        return "magic"
    if stripped[:1] == "!":
        return "shell"
    if stripped[:1] == "?":
        return "help"
    if assigned := _ASSIGNED.match(stripped):
        return "shell" if assigned.group(1) == "!" else "magic"
    lex = _Lex()
    comment = lex.scan(text)
    if lex.at_statement and text[:comment].rstrip().endswith("?"):
        return "help"
    return None


def _lines(source: str) -> Iterator[tuple[str, str]]:
    """(text, newline) of each line, as Python splits them."""
    for line in _LINES.findall(source):
        text = line.rstrip("\r\n")
        yield text, line[len(text):]


@dataclass
class _Removed:
    lines: dict[str, list[int]] = field(default_factory=dict)

    def add(self, kind: str, line: int) -> None:
        self.lines.setdefault(kind, []).append(line)

    def note(self) -> str:
        said = []
        for kind, (one, many) in KINDS.items():
            found = self.lines.get(kind)
            if not found:
                continue
            shown = ", ".join(map(str, found[:MAX_LINES_SHOWN]))
            if len(found) > MAX_LINES_SHOWN:
                shown += ", ..."
            said.append(f"{len(found)} {one if len(found) == 1 else many} "
                        f"(line{'s' if len(found) > 1 else ''} {shown})")
        return "removed " + ", ".join(said) if said else ""


def convert_cell(source: str) -> tuple[str, str]:
    """A code cell's source without IPython syntax, and a note saying what went
    (empty when nothing did)."""
    lines = list(_lines(source))
    first = next((text for text, _ in lines if text.strip()), "")
    if first.startswith("%%"):
        name = _CELL_MAGIC.match(first)
        what = f"a %%{name.group(1)} cell" if name else "a %% cell magic"
        return (f"# jaxjudge: this cell was left out ({what})\n",
                f"left out whole ({what}: its body is not run)")
    out: list[str] = []
    removed = _Removed()
    lex = _Lex()
    joined = False  # the line continues a removed one
    for number, (text, newline) in enumerate(lines, 1):
        if joined:
            out.append(newline)
            joined = text.endswith("\\")
            continue
        kind = _kind(text) if lex.at_statement and text.strip() else None
        if kind is None:
            lex.scan(text)
            out.append(text + newline)
            continue
        removed.add(kind, number)
        indent = text[:len(text) - len(text.lstrip())]
        out.append(f"{indent}pass  # jaxjudge: removed {KINDS[kind][0]}{newline}")
        joined = text.endswith("\\")
    return "".join(out), removed.note()
