"""Write a benchmark's results into its own section of docs/performance.md."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"


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
