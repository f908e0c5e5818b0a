"""Problem statements as HTML: Markdown (markdown-it-py, CommonMark with tables), code
blocks highlighted by Pygments into CSS classes (the stylesheet is served by the pages,
:func:`stylesheet`), and the result sanitized with nh3 (an allow-list: no script, no
event handler, no style attribute, no ``javascript:`` URL), so a statement can never run
anything in a student's page."""

from __future__ import annotations

import html
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

CSS_CLASS = "highlight"
_FORMATTER = HtmlFormatter(cssclass=CSS_CLASS, nowrap=True)
TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span",
    "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "code": {"class"}, "span": {"class"}, "pre": {"class"}, "div": {"class"},
    "th": {"align"}, "td": {"align"}, "ol": {"start"},
}


def code_html(code: str, language: str = "python") -> str:
    """Code as highlighted HTML (``<pre class="highlight">``), escaped."""
    try:
        lexer = get_lexer_by_name(language) if language else PythonLexer()
    except ClassNotFound:
        return f'<pre class="{CSS_CLASS}"><code>{html.escape(code)}</code></pre>'
    return f'<pre class="{CSS_CLASS}"><code>{highlight(code, lexer, _FORMATTER)}</code></pre>'


def _fence(code: str, language: str, _attrs: str) -> str:
    return code_html(code, language.strip().split(" ")[0] if language else "python")


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"highlight": _fence, "html": True}).enable("table")


def render(markdown: str) -> str:
    """A statement's Markdown as safe HTML."""
    return sanitize(_parser().render(markdown))


def sanitize(fragment: str) -> str:
    return nh3.clean(fragment, tags=TAGS, attributes=ATTRIBUTES,
                     clean_content_tags={"script", "style"},
                     url_schemes={"http", "https", "mailto"},
                     link_rel="noopener noreferrer")


@lru_cache(maxsize=1)
def stylesheet() -> str:
    """Pygments' rules for the highlighted code blocks."""
    return str(_FORMATTER.get_style_defs("." + CSS_CLASS))
