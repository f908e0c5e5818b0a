"""Statements rendered from Markdown: code highlighted into CSS classes, and nothing a
statement says can run in a student's page."""

from __future__ import annotations

from web.markdown import render, stylesheet


def test_code_blocks_are_highlighted_with_classes() -> None:
    html = render("Write `layout`:\n\n```python\ndef f(x):\n    return x < 1\n```\n")
    assert '<pre class="highlight"><code><span class="k">def</span>' in html
    assert "&lt;" in html and "style=" not in html
    assert ".highlight .k" in stylesheet()


def test_a_hostile_statement_is_neutralised() -> None:
    html = render(
        "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n"
        "[click](javascript:alert(3)) <a href=\"javascript:alert(4)\">x</a>\n\n"
        "<iframe src=\"https://evil.example\"></iframe><style>*{}</style>"
        "<p style=\"color:red\" onclick=\"alert(5)\">p</p>\n")
    lowered = html.lower()
    for bad in ("<script", "alert(1)", "onerror", 'href="javascript', "<iframe", "<style",
                "onclick", "style="):
        assert bad not in lowered, bad
    assert "<h1>Title</h1>" in html and "<p>p</p>" in html
    assert "<a" in html and "href" not in html  # the links lost their javascript: URL
