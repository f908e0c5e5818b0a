"""The server-side SVG charts (:mod:`web.charts`): parsed as XML, their bars counted and
measured against the numbers, labelled for screen readers, hostile text escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from web.charts import CHAR, WIDTH, Bucket, Marker, columns, rates, ticks, timeline

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script>&'


def parse(markup: str) -> ET.Element:
    return ET.fromstring(str(markup))  # not well-formed: ParseError


def rects(svg: ET.Element, cls: str = "bar") -> list[ET.Element]:
    return [r for r in svg.iter(f"{NS}rect") if r.get("class") == cls]


def texts(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{NS}text")]


def labelled(svg: ET.Element, chart_id: str, title: str) -> None:
    assert svg.get("role") == "img"
    assert svg.get("aria-labelledby") == f"{chart_id}-title {chart_id}-desc"
    found = svg.find(f"{NS}title")
    assert found is not None and found.get("id") == f"{chart_id}-title" and found.text == title
    desc = svg.find(f"{NS}desc")
    assert desc is not None and desc.get("id") == f"{chart_id}-desc" and desc.text
    assert svg.get("width") == "100%" and svg.get("viewBox", "").startswith("0 0 ")
    assert not list(svg.iter(f"{NS}script"))


def test_columns_draw_a_bar_per_value_with_heights_in_proportion() -> None:
    values = [("0–10", 3), ("10–20", 0), ("20–30", 6), ("100", 12)]
    svg = parse(columns(values, chart_id="hist", title="Scores", desc="Who scored what",
                        x_label="score (% of the maximum)", y_label="students"))
    labelled(svg, "hist", "Scores")
    bars = rects(svg)
    assert [b.get("data-value") for b in bars] == ["3", "0", "6", "12"]
    heights = [float(b.get("height", "")) for b in bars]
    assert heights[1] == 0 and heights[3] > 0
    assert abs(heights[2] / heights[0] - 2) < 0.01 and abs(heights[3] / heights[0] - 4) < 0.01
    # Bars stand on one baseline, left to right.
    bottoms = {round(float(b.get("y", "")) + float(b.get("height", "")), 1) for b in bars}
    assert len(bottoms) == 1
    xs = [float(b.get("x", "")) for b in bars]
    assert xs == sorted(xs)
    words = texts(svg)
    for label, _ in values:
        assert label in words
    assert "score (% of the maximum)" in words and "students" in words
    assert "15" in words and "20" not in words  # the top tick: the round number past 12


def test_rates_are_percent_of_one_track_and_labels_are_cut_and_escaped() -> None:
    long = "a-test-whose-name-goes-on-and-on-forever"
    rows = [("sample-1", 1.0), ("hidden-1", 0.25), (long, 0.5), (HOSTILE, 0.0)]
    markup = rates(rows, chart_id="tests", title="Pass rate per test", desc="d",
                   x_label="passed")
    assert "<script>" not in markup
    svg = parse(markup)
    labelled(svg, "tests", "Pass rate per test")
    bars, tracks = rects(svg), rects(svg, "track")
    assert len(bars) == len(tracks) == 4
    full = float(tracks[0].get("width", ""))
    widths = [float(b.get("width", "")) for b in bars]
    assert widths == [full, full / 4, full / 2, 0.0]
    words = texts(svg)
    for pct in ("100%", "25%", "50%", "0%"):
        assert pct in words
    assert HOSTILE in words  # shown as text, escaped in the markup
    cut = [w for w in words if w.startswith("a-test-whose")]
    assert cut and cut[0].endswith("…") and len(cut[0]) == 30
    assert any(t.text == f"{long}: 50%" for t in svg.iter(f"{NS}title"))


def test_timeline_places_bars_by_time_and_marks_the_due_dates() -> None:
    start = datetime(2025, 3, 1, tzinfo=UTC)
    buckets = [Bucket(start + timedelta(days=i), start + timedelta(days=i + 1), n, a)
               for i, (n, a) in enumerate([(4, 1), (0, 0), (8, 2), (2, 2)])]
    due = Marker(start + timedelta(days=3), "due", dashed=False)
    late = Marker(start + timedelta(days=3, hours=12), "late until", dashed=True)
    outside = Marker(start + timedelta(days=30), "far away")
    svg = parse(timeline(buckets, [due, late, outside], chart_id="time",
                         title="Submissions over time", desc="d", y_label="submissions"))
    labelled(svg, "time", "Submissions over time")
    bars, accepted = rects(svg), rects(svg, "bar-accepted")
    assert [b.get("data-value") for b in bars] == ["4", "8", "2"]  # no bar for 0
    assert [b.get("data-value") for b in accepted] == ["1", "2", "2"]
    hs = [float(b.get("height", "")) for b in bars]
    assert abs(hs[1] / hs[0] - 2) < 0.01
    assert float(accepted[2].get("height", "")) == hs[2]  # all of the last day accepted
    lines = [m for m in svg.iter(f"{NS}line") if m.get("class") == "marker"]
    assert len(lines) == 2  # the marker a month away is outside the span
    xs = [float(m.get("x1", "")) for m in lines]
    third = float(bars[1].get("x", ""))
    assert xs[0] > third and xs[1] > xs[0]  # after the third day's bar, late after due
    assert lines[0].get("stroke-dasharray") is None and lines[1].get("stroke-dasharray")
    assert "due" in texts(svg) and "late until" in texts(svg)
    assert "03-01" in texts(svg)


def test_empty_charts_are_still_valid_svg() -> None:
    for markup in (columns([], chart_id="a", title="t", desc="d", x_label="x", y_label="y"),
                   rates([], chart_id="b", title="t", desc="d", x_label="x"),
                   timeline([], [], chart_id="c", title="t", desc="d", y_label="y")):
        svg = parse(markup)
        assert not rects(svg)


def test_hostile_ids_titles_and_labels_stay_text() -> None:
    markup = columns([(HOSTILE, 1)], chart_id='x"><script>', title=HOSTILE, desc=HOSTILE,
                     x_label=HOSTILE, y_label=HOSTILE)
    assert "<script>" not in markup
    svg = parse(markup)
    assert svg.get("id") == 'x"><script>'
    assert HOSTILE in texts(svg)


def test_ticks_are_round_and_reach_the_top() -> None:
    assert ticks(0) == [0.0, 1.0]
    assert ticks(12) == [0, 5, 10, 15]
    assert ticks(3) == [0, 1, 2, 3]
    assert ticks(1000)[-1] >= 1000 and len(ticks(1000)) <= 6


def test_timeline_labels_stay_apart_and_inside_the_chart() -> None:
    start = datetime(2025, 3, 1, 9, tzinfo=UTC)
    buckets = [Bucket(start + timedelta(hours=i), start + timedelta(hours=i + 1), i % 3)
               for i in range(52)]
    svg = parse(timeline(buckets, [], chart_id="t", title="t", desc="d", y_label="y"))
    ticks_ = [(float(t.get("x", "")), t.text or "") for t in svg.iter(f"{NS}text")
              if t.get("class") == "tick"]
    assert len(ticks_) >= 4 and ticks_[0][1] == "03-01 09:00"
    for (x, words), (next_x, _) in zip(ticks_, ticks_[1:], strict=False):
        assert x + len(words) * CHAR < next_x, (words, x, next_x)
    assert all(x + len(words) * CHAR <= WIDTH for x, words in ticks_)
