"""Write a benchmark's results into its own section of docs/performance.md."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"


def measured(command: str) -> str:
    """``Measured <date> on <host> (<cores>, Python, jaxjudge <commit>) by `command```."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() or "unknown"
    return (f"Measured {date.today()} on {platform.node() or 'this machine'} "
            f"({os.cpu_count()} cores, Python {platform.python_version()}, jaxjudge "
            f"{commit}) by `{command}`")


def command_line(script: str, args: argparse.Namespace, defaults: argparse.Namespace,
                 options: tuple[str, ...], flags: tuple[str, ...] = ()) -> str:
    """The command that ran a bench: ``script`` and each of ``options`` whose value is not
    its default, then each of ``flags`` that is set (``--name value``, ``--flag``)."""
    words = [script]
    for name in options:
        if getattr(args, name) != getattr(defaults, name):
            words.append(f"--{name.replace('_', '-')} {getattr(args, name)}")
    words += [f"--{name.replace('_', '-')}" for name in flags if getattr(args, name)]
    return " ".join(words)


def replace_section(name: str, lines: list[str], doc: Path = DOC) -> None:
    """Replace what stands between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``
    (added at the end when missing) with ``lines``."""
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    text = doc.read_text() if doc.exists() else "# Performance\n"
    if begin not in text:
        text = text.rstrip("\n") + f"\n\n{begin}\n{end}\n"
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    doc.write_text(head + "\n".join([begin, *lines, end]) + tail)
    print(f"wrote {doc}")
