"""The insight pages (issue 26) through the test client against the class of
:mod:`tests.web.insight_class`: the numbers in the tables are the class's, every chart
is an SVG with its table, the CSV downloads, similarity ranks the copy first and shows
its fragments side by side; who may see them; hostile ids and code stay text."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from app.sessions import Principal, Sessions
from judge.similarity import NOTE
from service import outcomes
from service.models import Assignment, Batch, Submission, Tenant
from tests.web.insight_class import (
    ATTEMPTS,
    EXPECTED,
    HOSTILE,
    START,
    new_assignment,
    seed,
    submission,
)
from tests.web.pages_support import Page, sign_in

SVG = re.compile(r"<svg .*?</svg>", re.S)


def tenant(app: Flask, name: str = "course-a") -> int:
    with app.extensions["jaxjudge"].db.session() as s:
        found = s.scalar(select(Tenant.id).where(Tenant.name == name))
        assert found is not None
        return found


@pytest.fixture
def klass(app: Flask, keys: dict[str, str]) -> str:
    """The class, in an assignment of tenant course-a; its id."""
    db = app.extensions["jaxjudge"].db
    _, aid = new_assignment(db, tenant(app))
    seed(db, tenant(app), aid)
    return aid


def rows(html: str, testid: str, key: str) -> dict[str, str]:
    """``data-<key>`` of each row of ``testid`` to the text of its last cell."""
    found = re.findall(rf'data-testid="{testid}" data-{key}="([^"]*)">(.*?)</tr>', html, re.S)
    return {k: re.sub(r"<[^>]+>", "", cells.rsplit("<td>", 1)[-1]).strip()
            for k, cells in found}


def test_the_analytics_page_shows_the_classes_numbers(
        client: FlaskClient, keys: dict[str, str], klass: str) -> None:
    sid = sign_in(client, keys["instructor"])
    r = client.get(f"/app/{sid}/assignments/{klass}/analytics")
    assert r.status_code == 200, r.data[:500]
    html = r.get_data(as_text=True)
    # Four charts, each an accessible SVG of the chart's numbers.
    charts = [ET.fromstring(m) for m in SVG.findall(html)]
    assert [c.get("id") for c in charts] == ["chart-histogram", "chart-tests",
                                             "chart-timeline", "chart-attempts"]
    assert all(c.get("role") == "img" for c in charts)
    bars = [r.get("data-value") for r in charts[0].iter("{http://www.w3.org/2000/svg}rect")
            if r.get("class") == "bar"]
    assert bars == ["1", "0", "0", "0", "0", "3", "0", "0", "0", "0", "2"]
    # The tables beside them.
    hist = {k: v for k, v in rows(html, "histogram-row", "lower").items() if v != "0"}
    assert hist == {"0": "1", "50": "3", "100": "2"}
    assert re.search(r'data-testid="never-started">1<', html)
    assert re.search(r'data-testid="stuck">1<', html)
    assert re.search(r'data-testid="started">3<', html)
    assert re.search(r'data-testid="accepted">2<', html)
    graded = sum(len(k) for k in ATTEMPTS.values())
    sample = re.search(r'data-test="sample-1">(.*?)</tr>', html, re.S)
    assert sample and f"2 / {graded}" in sample.group(1) and ">17%<" in sample.group(1)
    assert {k: v for k, v in rows(html, "attempts-row", "attempts").items() if v != "0"} \
        == {"1": "1", "2": "1"}
    assert "Median: 1.5 graded attempt(s)" in html
    # The stuck student links to their page; the wrong answers are grouped by output.
    stuck = re.search(r'data-testid="stuck-row" data-user-id="cy">(.*?)</tr>', html, re.S)
    assert stuck and f"/assignments/{klass}/student?user=cy" in stuck.group(1)
    groups = re.findall(r'data-testid="wrong-answer" data-test="([^"]+)" '
                        r'data-students="(\d+)".*?"wrong-received"><code>(.*?)</code>', html, re.S)
    assert groups == [("sample-1", "3", "P(&#39;model&#39;)"), ("sample-1", "1", "P()")]
    assert EXPECTED.replace("'", "&#39;") in html
    # The due dates, and the way to the CSV and to the similarity page.
    assert "Due 2025-03-02 15:00 UTC" in html
    assert f"/app/{sid}/assignments/{klass}/analytics.csv" in html
    assert 'id="nav-analytics"' in html and 'id="nav-similarity"' in html
    # A hostile student id is text, never markup.
    assert HOSTILE not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_analytics_csv_downloads_the_same_numbers(
        client: FlaskClient, keys: dict[str, str], klass: str) -> None:
    sid = sign_in(client, keys["instructor"])
    r = client.get(f"/app/{sid}/assignments/{klass}/analytics.csv")
    assert r.status_code == 200 and r.mimetype == "text/csv"
    assert r.headers["Content-Disposition"] == \
        f'attachment; filename="assignment-{klass}-analytics.csv"'
    table = list(csv.DictReader(io.StringIO(r.get_data(as_text=True))))
    assert {t["chart"] for t in table} >= {"histogram", "wrong_answer"}
    wrong = [(t["key"], t["detail"], t["count"]) for t in table if t["chart"] == "wrong_answer"]
    assert wrong == [("sample-1", "P('model')", "3"), ("sample-1", "P()", "1")]


def test_similarity_ranks_the_copy_first_and_shows_it_side_by_side(
        app: Flask, client: FlaskClient, keys: dict[str, str], klass: str) -> None:
    sid = sign_in(client, keys["instructor"])
    html = client.get(f"/app/{sid}/assignments/{klass}/similarity").get_data(as_text=True)
    assert NOTE in html and "lead to check, not a verdict" in NOTE and "starter code" in html
    pairs = re.findall(r'data-testid="pair-row" data-a="([^"]+)" data-b="([^"]+)" '
                       r'data-similarity="([^"]+)"', html)
    assert pairs and pairs[0][:2] == ("ana", "ben") and float(pairs[0][2]) >= 0.5
    assert all(float(p[2]) < float(pairs[0][2]) for p in pairs[1:])
    assert re.search(r'data-testid="cluster-row" data-size="2">\s*<td><a [^>]*>ana</a>, '
                     r'<a [^>]*>ben</a>', html)
    # A threshold above every pair: no cluster; a bad threshold falls back to the default.
    high = client.get(f"/app/{sid}/assignments/{klass}/similarity?threshold=100")
    assert 'id="no-clusters"' in high.get_data(as_text=True)
    assert client.get(f"/app/{sid}/assignments/{klass}/similarity?threshold=nan"
                      ).status_code == 200
    # The threshold is in percent, whatever its size: 1 is 1% (every pair sharing code is
    # linked), and 0.5% survives the round trip through the page's links.
    low = client.get(f"/app/{sid}/assignments/{klass}/similarity?threshold=1"
                     ).get_data(as_text=True)
    assert "Clusters at 1%" in low and 'id="no-clusters"' not in low
    half = client.get(f"/app/{sid}/assignments/{klass}/similarity?threshold=0.5"
                      ).get_data(as_text=True)
    assert 'value="0.5"' in half and "threshold=0.5" in half
    # Side by side: both codes, the fragments numbered alike on both sides.
    link = re.search(r'href="([^"]+)" data-testid="compare"', html)
    assert link
    page = client.get(link.group(1).replace("&amp;", "&"))
    assert page.status_code == 200
    side = page.get_data(as_text=True)
    fragments = re.findall(r"lines (\d+)–(\d+)</a> ↔ <a [^>]*>lines (\d+)–(\d+)", side)
    assert fragments
    a1, _, b1, _ = map(int, fragments[0])
    assert re.search(rf'id="a-L{a1}" class="frag frag-0" data-fragment="1"', side)
    assert re.search(rf'id="b-L{b1}" class="frag frag-0" data-fragment="1"', side)
    assert "def shard_width(total, devices):" in side and "def per_device(cols, n):" in side
    assert NOTE in side


def test_hostile_code_is_text_side_by_side(
        app: Flask, client: FlaskClient, keys: dict[str, str], klass: str) -> None:
    with app.extensions["jaxjudge"].db.session() as s:
        ids = dict(s.execute(select(Submission.student_id, Submission.id)
                             .where(Submission.assignment_id == klass)).all())
    sid = sign_in(client, keys["instructor"])
    r = client.get(f"/app/{sid}/assignments/{klass}/similarity/{ids[HOSTILE]}/{ids['dee']}")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html and HOSTILE not in html
    assert "&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;" in html


def test_two_submissions_of_one_student_side_by_side_link_to_that_student(
        app: Flask, client: FlaskClient, keys: dict[str, str], klass: str) -> None:
    with app.extensions["jaxjudge"].db.session() as s:
        first, second = s.scalars(select(Submission.id).where(
            Submission.assignment_id == klass, Submission.student_id == "cy",
            Submission.sample_run.is_(False)).limit(2)).all()
    sid = sign_in(client, keys["instructor"])
    r = client.get(f"/app/{sid}/assignments/{klass}/similarity/{first}/{second}")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    assert f"cy ({second[:8]})" in html  # the second told apart in the heading
    links = re.findall(r'<h2 id="side-[ab]-title"><a href="([^"]+)">', html)
    assert len(links) == 2 and all(link.endswith("/student?user=cy") for link in links), links


def test_a_class_upload_is_compared_within_itself(
        app: Flask, client: FlaskClient, keys: dict[str, str], klass: str) -> None:
    """A batch's page: every submission of the upload compared, the copy first; its side
    by side compares within the upload, and names no submission outside it."""
    db = app.extensions["jaxjudge"].db
    with db.session() as s:
        latest = dict(s.execute(select(Submission.student_id, Submission.id).where(
            Submission.assignment_id == klass).order_by(Submission.received_at)).all())
        s.add(Batch(id="b" * 32, tenant_id=tenant(app), problem="demo/layout",
                    name="week 3", total=len(latest)))
        s.flush()
        for sub in latest.values():
            s.get(Submission, sub).batch_id = "b" * 32  # type: ignore[union-attr]
        outside = s.scalar(select(Submission.id).where(
            Submission.assignment_id == klass, Submission.id.not_in(list(latest.values()))))
    sid = sign_in(client, keys["instructor"])
    base = f"/app/{sid}/assignments/{klass}/batches/{'b' * 32}"
    assert 'id="batch-similarity"' in client.get(base).get_data(as_text=True)
    html = client.get(f"{base}/similarity").get_data(as_text=True)
    assert NOTE in html and "class upload" in html
    pairs = re.findall(r'data-testid="pair-row" data-a="([^"]+)" data-b="([^"]+)"', html)
    assert pairs and pairs[0] == ("ana", "ben")
    assert len({name for pair in pairs for name in pair}) <= len(latest)
    link = re.search(r'href="([^"]+)" data-testid="compare"', html)
    assert link and "batch=" + "b" * 32 in link.group(1)
    side = client.get(link.group(1).replace("&amp;", "&")).get_data(as_text=True)
    assert 'data-testid="fragment"' in side and f"batches/{'b' * 32}/similarity" in side
    # A submission outside the upload, or a batch of no submission of this assignment: 404.
    a_sub = latest["ana"]
    assert client.get(f"/app/{sid}/assignments/{klass}/similarity/{a_sub}/{outside}"
                      f"?batch={'b' * 32}").status_code == 404
    assert client.get(f"/app/{sid}/assignments/{klass}/batches/{'c' * 32}/similarity"
                      ).status_code == 404


def test_a_learner_is_refused_and_foreign_ids_are_404(
        app: Flask, client: FlaskClient, keys: dict[str, str], klass: str,
        learner: Page) -> None:
    for path in ("analytics", "analytics.csv", "similarity"):
        r = client.get(f"/app/{learner.sid}/assignments/{klass}/{path}")
        assert r.status_code == 403 and "For instructors" in r.get_data(as_text=True), path
    r = client.get(f"/app/{learner.sid}/problems/demo/layout/analytics")
    assert r.status_code == 403
    # The learner's assignment is course-a's too, in another course: an LTI instructor
    # of that course reaches none of the class's pages.
    svc = app.extensions["jaxjudge"]
    with svc.db.session() as s:
        theirs = s.get(Assignment, learner.assignment_id)
        assert theirs is not None
        course_id = theirs.course_id
        ids = list(s.scalars(select(Submission.id).where(Submission.assignment_id == klass)))
    lti = Sessions(svc.redis, 60).start(Principal(
        tenant_id=tenant(app), role="instructor", via="lti", user_id="teacher",
        course_id=course_id, assignment_id=learner.assignment_id))
    for path in ("analytics", "analytics.csv", "similarity", f"similarity/{ids[0]}/{ids[1]}"):
        r = client.get(f"/app/{lti}/assignments/{klass}/{path}")
        assert r.status_code == 404 and "no such assignment" in r.get_data(as_text=True), path
    assert client.get(f"/app/{lti}/assignments/{learner.assignment_id}/analytics"
                      ).status_code == 200
    r = client.get(f"/app/{lti}/problems/demo/layout/analytics")
    assert r.status_code == 403 and "Sign in with a key" in r.get_data(as_text=True)
    # Another tenant's instructor: 404; a submission of another assignment: 404.
    other = sign_in(client, keys["other"])
    assert client.get(f"/app/{other}/assignments/{klass}/analytics").status_code == 404
    mine = sign_in(client, keys["instructor"])
    with svc.db.session() as s:
        elsewhere = submission(tenant(app), learner.assignment_id, "alice", "ok", START,
                               "x = 1\n")
        s.add(elsewhere)
        outcomes.fill(s, [elsewhere])
        foreign = elsewhere.id
    for path in (f"similarity/{ids[0]}/{foreign}", f"similarity/{foreign}/{ids[0]}",
                 f"similarity/{ids[0]}/{ids[0]}", f"similarity/{ids[0]}/nope"):
        r = client.get(f"/app/{mine}/assignments/{klass}/{path}")
        assert r.status_code == 404, path


def test_a_problems_analytics_are_for_key_instructors(
        client: FlaskClient, keys: dict[str, str], klass: str) -> None:
    sid = sign_in(client, keys["instructor"])
    r = client.get(f"/app/{sid}/problems/demo/layout/analytics")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    assert re.search(r'data-testid="students">6<', html)  # who submitted, no roster
    assert len(SVG.findall(html)) == 4
    assert "student?user=" not in html  # no assignment: no student page to link
    for problem in ("demo/nope", "Demo/Layout", "demo", "demo/layout/x"):
        assert client.get(f"/app/{sid}/problems/{problem}/analytics").status_code == 404
    other = sign_in(client, keys["other"])  # another tenant never submitted to it
    assert client.get(f"/app/{other}/problems/demo/layout/analytics").status_code == 404
