"""``jaxjudge new SET/SLUG``: a problem package that verifies out of the box.

The package is written from ``judge/templates/problem/`` (every ``*.tmpl`` file, with
``$$entry``, ``$$title`` (``$$title_yaml`` quoted), ``$$problem_id`` and ``$$seed`` filled in): a small JAX exercise
(a row-wise softmax) with its statement, reference and one example submission filed under
each verdict a submission can get, so that ``jaxjudge build`` and ``jaxjudge verify`` pass
before the author has changed anything, and every file shows by example what goes where.
"""

from __future__ import annotations

import json
import keyword
import shutil
import string
import zlib
from pathlib import Path

from judge.catalog import ID_PATTERN
from judge.errors import UsageError

TEMPLATES = Path(__file__).parent / "templates" / "problem"
SUFFIX = ".tmpl"


class ScaffoldError(UsageError):
    """The id is not a valid problem id, or its folder exists already."""


def entry_name(slug: str) -> str:
    """The entry point's name for a slug: dashes become underscores; a slug that starts
    with a digit or is a Python keyword gets a leading ``solve_``."""
    name = slug.replace("-", "_")
    return f"solve_{name}" if name[0].isdigit() or keyword.iskeyword(name) else name


def scaffold(root: Path, problem_id: str, title: str | None = None) -> Path:
    """Write a new package for ``problem_id`` under ``root``; returns its folder. Nothing
    is written when the id is invalid or the folder exists already."""
    if not ID_PATTERN.fullmatch(problem_id):
        raise ScaffoldError(f"{problem_id!r} is not a problem id: SET/SLUG, lower-case "
                            "letters, digits and dashes, each starting with a letter or digit")
    target = root / problem_id
    if target.exists():
        raise ScaffoldError(f"{target} exists already")
    slug = problem_id.split("/")[1]
    title = title or slug.replace("-", " ").capitalize()
    if not title.strip() or any(c in title for c in "\n\r") or len(title) > 200:
        raise ScaffoldError("the title must be one line of 1 to 200 characters")
    values = {
        "entry": entry_name(slug),
        "title": title,
        "title_yaml": json.dumps(title),  # a JSON string is a YAML string
        "problem_id": problem_id,
        # A seed of its own per problem, stable for the id.
        "seed": str(zlib.crc32(problem_id.encode()) % 10**9),
    }
    staging = target.with_name(f".{target.name}.new")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for template in sorted(TEMPLATES.rglob(f"*{SUFFIX}")):
            out = staging / template.relative_to(TEMPLATES).with_suffix("")
            out.parent.mkdir(parents=True, exist_ok=True)
            text = string.Template(template.read_text(encoding="utf-8"))
            out.write_text(text.substitute(values), encoding="utf-8")
        staging.rename(target)  # all of it or none of it
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
