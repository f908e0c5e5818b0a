"""Charts drawn on the server as SVG: pure functions from numbers to markup, no script.

Each chart is an ``<svg role="img">`` labelled by its ``<title>`` and ``<desc>`` (the
desc says what it shows and its largest numbers), with axis labels, a ``viewBox`` and
``width="100%"`` (it scales to its box: 1280 px, an LMS's 990 px frame), every bar a
``<title>`` of its own (the number on hover). The numbers themselves go in a table beside
the chart (the page's job): the table is the accessible version, the chart the picture.

Colours are Okabe and Ito's palette for colour-blind readers (blue #0072B2, sky blue
#56B4E9, vermillion #D55E00) and differ in lightness too, so a greyscale print tells
them apart; the late-until line is dashed, the due date solid. Every text is escaped
(:func:`markupsafe.escape`): a test's name or a bucket's label is data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

WIDTH = 640
BLUE, SKY, VERMILLION, GREY, INK = "#0072B2", "#56B4E9", "#D55E00", "#e3e6eb", "#1d2330"
FONT = 'font-family="system-ui, sans-serif" font-size="12"'
LABEL_CHARS = 30  # a horizontal bar's label is cut here (whole in its <title>)
CHAR = 7  # the widest a character of the 12-unit font is, about


@dataclass(frozen=True)
class Box:
    """The plotting area inside the viewBox."""

    left: float
    top: float
    width: float
    height: float

    @property
    def bottom(self) -> float:
        return self.top + self.height


@dataclass(frozen=True)
class Bucket:
    """One bar of a time series: ``[start, end)``, its count and the part accepted."""

    start: datetime
    end: datetime
    count: int
    accepted: int = 0


@dataclass(frozen=True)
class Marker:
    """A vertical line at a moment (a due date), solid or dashed."""

    at: datetime
    label: str
    dashed: bool = False


def ticks(top: float, most: int = 5) -> list[float]:
    """0 and round steps (1, 2 or 5 times a power of ten) up to at least ``top``, at
    most ``most`` + 1 of them; whole numbers for counts."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    step = max(step, 1.0)
    count = math.ceil(top / step - 1e-9)
    return [i * step for i in range(count + 1)]


def number(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def _svg(chart_id: str, title: str, desc: str, height: float, body: list[str]) -> Markup:
    cid = escape(chart_id)
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{cid}" role="img" '
        f'aria-labelledby="{cid}-title {cid}-desc" viewBox="0 0 {WIDTH} {number(height)}" '
        f'width="100%" preserveAspectRatio="xMinYMin meet" {FONT}>'
        f'<title id="{cid}-title">{escape(title)}</title>'
        f'<desc id="{cid}-desc">{escape(desc)}</desc>' + "".join(body) + "</svg>")


def _text(x: float, y: float, words: str, anchor: str = "middle", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{INK}"{extra}>'
            f"{escape(words)}</text>")


def _y_axis(box: Box, scale: list[float], label: str) -> list[str]:
    """Grid lines at the ticks, their numbers, and the axis's label (turned)."""
    top = scale[-1]
    out = []
    for t in scale:
        y = box.bottom - box.height * t / top
        out.append(f'<line class="grid" x1="{box.left}" x2="{box.left + box.width}" '
                   f'y1="{y:.1f}" y2="{y:.1f}" stroke="{GREY}"/>')
        out.append(_text(box.left - 6, y + 4, number(t), "end"))
    mid = box.top + box.height / 2
    out.append(_text(14, mid, label, extra=f' class="axis-label" '
                     f'transform="rotate(-90 14 {mid:.1f})"'))
    return out


def columns(values: Sequence[tuple[str, float]], *, chart_id: str, title: str, desc: str,
            x_label: str, y_label: str, height: float = 260) -> Markup:
    """Vertical bars, one per ``(label, value)`` in order, from 0 (a histogram: the
    labels are its bins)."""
    box = Box(56, 12, WIDTH - 56 - 12, height - 12 - 44)
    scale = ticks(max((v for _, v in values), default=0))
    body = _y_axis(box, scale, y_label)
    slot = box.width / max(len(values), 1)
    for i, (label, value) in enumerate(values):
        h = box.height * value / scale[-1]
        x = box.left + i * slot
        body.append(f'<rect class="bar" x="{x + slot * 0.1:.1f}" y="{box.bottom - h:.1f}" '
                    f'width="{slot * 0.8:.1f}" height="{h:.1f}" fill="{BLUE}" '
                    f'data-value="{number(value)}"><title>{escape(label)}: '
                    f"{escape(number(value))}</title></rect>")
        body.append(_text(x + slot / 2, box.bottom + 16, label, extra=' class="tick"'))
    body.append(_text(box.left + box.width / 2, height - 6, x_label,
                      extra=' class="axis-label"'))
    return _svg(chart_id, title, desc, height, body)


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "…"


def rates(rows: Sequence[tuple[str, float]], *, chart_id: str, title: str, desc: str,
          x_label: str) -> Markup:
    """Horizontal bars of fractions (0 to 1) shown as percent over a grey 100% track,
    one row per ``(label, fraction)``; a long label is cut (whole in the bar's title)."""
    row = 26
    box = Box(200, 8, WIDTH - 200 - 48, row * max(len(rows), 1))
    height = box.bottom + 40
    body = []
    for pct in (0, 25, 50, 75, 100):
        x = box.left + box.width * pct / 100
        body.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{box.top}" '
                    f'y2="{box.bottom}" stroke="{GREY}"/>')
        body.append(_text(x, box.bottom + 16, f"{pct}%", extra=' class="tick"'))
    for i, (label, fraction) in enumerate(rows):
        fraction = min(max(fraction, 0.0), 1.0)
        y = box.top + i * row
        shown = f"{fraction * 100:.0f}%"
        body.append(_text(box.left - 8, y + row / 2 + 4, _short(label), "end",
                          ' class="row-label"'))
        body.append(f'<rect class="track" x="{box.left}" y="{y + 4}" width="{box.width}" '
                    f'height="{row - 8}" fill="{GREY}"/>')
        body.append(f'<rect class="bar" x="{box.left}" y="{y + 4}" '
                    f'width="{box.width * fraction:.1f}" height="{row - 8}" fill="{BLUE}" '
                    f'data-value="{fraction:.4f}"><title>{escape(label)}: {shown}</title></rect>')
        body.append(_text(box.left + box.width + 6, y + row / 2 + 4, shown, "start",
                          ' class="value"'))
    body.append(_text(box.left + box.width / 2, height - 6, x_label,
                      extra=' class="axis-label"'))
    return _svg(chart_id, title, desc, height, body)


def _stamp(at: datetime, hourly: bool) -> str:
    return at.strftime("%m-%d %H:%M" if hourly else "%m-%d")


def timeline(buckets: Sequence[Bucket], markers: Sequence[Marker], *, chart_id: str,
             title: str, desc: str, y_label: str, height: float = 280) -> Markup:
    """A time series: each bucket a bar (sky blue: all, blue from the bottom: the
    accepted part) placed by its start and end, and each marker inside the span a
    vertical line with its label (outside it, the desc and the page say the date)."""
    box = Box(56, 40, WIDTH - 56 - 16, height - 40 - 44)
    scale = ticks(max((b.count for b in buckets), default=0))
    body = _y_axis(box, scale, y_label)
    if buckets:
        t0, t1 = buckets[0].start.timestamp(), buckets[-1].end.timestamp()
        span = max(t1 - t0, 1.0)
        hourly = (buckets[0].end - buckets[0].start).total_seconds() < 86400

        def x_of(at: datetime) -> float:
            return box.left + box.width * (at.timestamp() - t0) / span

        for b in buckets:
            x, w = x_of(b.start), max(x_of(b.end) - x_of(b.start), 1.0)
            for cls, value, colour in (("bar", b.count, SKY), ("bar-accepted", b.accepted,
                                                               BLUE)):
                h = box.height * value / scale[-1]
                if h > 0:
                    body.append(
                        f'<rect class="{cls}" x="{x + w * 0.08:.1f}" y="{box.bottom - h:.1f}" '
                        f'width="{w * 0.84:.1f}" height="{h:.1f}" fill="{colour}" '
                        f'data-value="{value}"><title>{escape(_stamp(b.start, hourly))}: '
                        f"{b.count} submission(s), {b.accepted} accepted</title></rect>")
        every = max(1, math.ceil(len(buckets) / 6))
        for b in buckets[::every]:
            x, words = x_of(b.start), _stamp(b.start, hourly)
            if x + len(words) * CHAR <= WIDTH:  # a label that would be cut is left out
                body.append(_text(x, box.bottom + 16, words, "start", ' class="tick"'))
        for m in markers:
            if t0 <= m.at.timestamp() <= t1:
                x = x_of(m.at)
                dash = ' stroke-dasharray="6 4"' if m.dashed else ""
                label_y = box.top - (8 if m.dashed else 24)  # two rows above the plot
                body.append(f'<line class="marker" x1="{x:.1f}" x2="{x:.1f}" '
                            f'y1="{label_y - 10}" y2="{box.bottom}" stroke="{VERMILLION}" '
                            f'stroke-width="2"{dash}><title>{escape(m.label)}</title></line>')
                anchor = "end" if x > box.left + box.width * 0.7 else "start"
                shift = -4 if anchor == "end" else 4
                body.append(_text(x + shift, label_y, m.label, anchor,
                                  ' class="marker-label"'))
    body.append(f'<rect x="{box.left}" y="{height - 18}" width="12" height="12" fill="{SKY}"/>')
    body.append(_text(box.left + 16, height - 8, "submissions", "start"))
    body.append(f'<rect x="{box.left + 110}" y="{height - 18}" width="12" height="12" '
                f'fill="{BLUE}"/>')
    body.append(_text(box.left + 126, height - 8, "accepted", "start"))
    return _svg(chart_id, title, desc, height, body)
