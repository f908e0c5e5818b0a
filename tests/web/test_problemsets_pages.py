"""The instructor pages of the tenant's own problem sets (signed in with a key): making
a set, uploading a package (a queued version and its checks), refusals shown on the page
with nothing stored, another tenant's sets out of sight, and making a version live with
a rejudge and its report. No worker: builds are set as a worker would leave them."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from packages_support import scaffold_files, slim, zip_package
from sqlalchemy import func, select, update

from app.sessions import Principal, Sessions
from judge.verdict import Verdict
from service.models import (
    BuildStatus,
    Package,
    PackageVersion,
    ProblemSet,
    Status,
    Submission,
    Tenant,
)
from service.submissions import new_id
from tests.web.pages_support import csrf_token, grade, sign_in

VERSION_PAGE = re.compile(r"/app/[^/]+/problemsets/ml-course/problems/softmax/versions/"
                          r"([0-9a-f]{16})$")


class Instructor:
    """A key sign-in on the problems page, posting its forms with the page's token."""

    def __init__(self, client: FlaskClient, key: str) -> None:
        self.client = client
        self.base = f"/app/{sign_in(client, key)}"
        self.token = csrf_token(client, self.problems)

    @property
    def problems(self) -> str:
        return self.base + "/problemsets"

    def post(self, path: str, **data: Any) -> Any:
        return self.client.post(self.base + path, data={"csrf_token": self.token, **data},
                                content_type="multipart/form-data")

    def make_set(self, name: str = "ml-course", title: str = "Machine learning") -> Any:
        return self.post("/problemsets", name=name, title=title)

    def upload(self, data: bytes, name: str = "ml-course", **form: Any) -> Any:
        return self.post(f"/problemsets/{name}/problems",
                         package=(io.BytesIO(data), "softmax.zip"), **form)

    def version(self, version: str) -> str:
        return f"{self.base}/problemsets/ml-course/problems/softmax/versions/{version}"

    def uploaded(self, files: dict[str, bytes] | None = None) -> str:
        """Upload the package (the slim scaffold unless ``files``); the version."""
        r = self.upload(zip_package(files or slim(scaffold_files())))
        assert r.status_code == 303, r.get_data(as_text=True)[:500]
        found = VERSION_PAGE.search(r.headers["Location"])
        assert found, r.headers["Location"]
        return found.group(1)


@pytest.fixture
def teacher(client: FlaskClient, keys: dict[str, str]) -> Instructor:
    return Instructor(client, keys["instructor"])


def count(app: Flask, model: type) -> int:
    with app.extensions["jaxjudge"].db.session() as s:
        return s.scalar(select(func.count()).select_from(model)) or 0


def set_build(app: Flask, version: str, **values: Any) -> None:
    """Leave the version's build as a worker would (status, steps, error...)."""
    with app.extensions["jaxjudge"].db.session() as s:
        s.execute(update(PackageVersion).where(PackageVersion.version == version)
                  .values(**values))


def live_version(app: Flask) -> str | None:
    with app.extensions["jaxjudge"].db.session() as s:
        return s.scalar(select(Package.live_version).where(
            Package.problem == "ml-course/softmax"))


def test_a_set_is_made_on_the_problems_page(
        app: Flask, client: FlaskClient, teacher: Instructor) -> None:
    html = client.get(teacher.problems).get_data(as_text=True)
    assert 'id="no-sets"' in html and 'id="nav-problems"' in html
    r = teacher.make_set()
    assert r.status_code == 303 and r.headers["Location"].endswith("#set-ml-course")
    html = client.get(teacher.problems).get_data(as_text=True)
    assert 'data-set="ml-course"' in html and "Machine learning" in html
    assert 'id="upload-ml-course"' in html and "No problems yet." in html
    for name, status, says in (("ml-course", 409, "is taken"),
                               ("demo", 409, "one of the judge&#39;s own sets"),
                               ("Bad_Name", 422, "is not a set name")):
        r = teacher.make_set(name)
        page = r.get_data(as_text=True)
        assert r.status_code == status and 'id="set-error"' in page and says in page, name
    assert count(app, ProblemSet) == 1
    # Without the token, nothing is made.
    r = client.post(teacher.problems, data={"name": "another"})
    assert r.status_code == 400 and count(app, ProblemSet) == 1


def test_an_upload_shows_its_queued_version_and_its_checks(
        app: Flask, client: FlaskClient, teacher: Instructor) -> None:
    assert teacher.make_set().status_code == 303
    version = teacher.uploaded()
    html = client.get(teacher.version(version)).get_data(as_text=True)
    assert 'data-status="queued"' in html and "No version is live yet." in html
    assert re.search(r'data-testid="build-checked">0</span> of <span id="build-total">6<', html)
    assert 'data-progress-url="' in html and 'id="make-live-form"' not in html
    progress = client.get(teacher.version(version) + "/progress").get_json()
    assert progress == {"status": "queued", "checked": 0, "total": 6, "done": False}
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.scalars(select(PackageVersion)).one()
        assert (row.version, row.status, row.publish) == (version, BuildStatus.QUEUED, False)
    listed = client.get(teacher.problems).get_data(as_text=True)
    assert (f'data-problem="ml-course/softmax" data-version="{version}" '
            f'data-status="queued"') in listed
    # The same files again are the same version; a slug names another problem.
    assert teacher.uploaded() == version
    r = teacher.upload(zip_package(slim(scaffold_files()), folder=None), slug="softmax-2",
                       publish="1")
    assert r.status_code == 303 and "/problems/softmax-2/versions/" in r.headers["Location"]
    with app.extensions["jaxjudge"].db.session() as s:
        assert s.scalars(select(PackageVersion.publish).order_by(
            PackageVersion.uploaded_at)).all() == [False, True]
    listed = client.get(teacher.problems).get_data(as_text=True)
    assert 'data-problem="ml-course/softmax-2"' in listed
    # No slug and no folder, or no file: the reason, at the set's form.
    r = teacher.upload(zip_package(slim(scaffold_files()), folder=None))
    assert r.status_code == 422 and "give its slug" in r.get_data(as_text=True)
    r = teacher.post("/problemsets/ml-course/problems")
    assert r.status_code == 422 and 'id="upload-error"' in r.get_data(as_text=True)
    assert count(app, PackageVersion) == 2


def _with_yaml(old: str, new: str) -> bytes:
    files = slim(scaffold_files())
    files["problem.yaml"] = files["problem.yaml"].replace(old.encode(), new.encode())
    return zip_package(files)


@pytest.mark.parametrize(("data", "says"), [
    (b"not a zip", "not a valid zip archive"),
    (zip_package({"../problem.yaml": b"x"}, folder=None), "escapes the archive"),
    (_with_yaml("{name: allclose,", "{name: no-such-checker,"), "unknown checker"),
], ids=["not-zip", "traversal", "unknown-checker"])
def test_a_hostile_package_shows_the_reason_and_nothing_is_stored(
        app: Flask, client: FlaskClient, teacher: Instructor, data: bytes, says: str) -> None:
    assert teacher.make_set().status_code == 303
    r = teacher.upload(data)
    page = r.get_data(as_text=True)
    assert r.status_code == 422 and r.mimetype == "text/html"
    found = re.search(r'id="upload-error"[^>]*>([^<]*)<', page)
    assert found and says in found.group(1), page[:2000]
    assert count(app, Package) == 0 and count(app, PackageVersion) == 0


def test_another_tenants_sets_are_out_of_sight(
        app: Flask, client: FlaskClient, keys: dict[str, str], teacher: Instructor) -> None:
    assert teacher.make_set().status_code == 303
    version = teacher.uploaded()
    set_build(app, version, status=BuildStatus.READY)
    other = Instructor(client, keys["other"])
    html = client.get(other.problems).get_data(as_text=True)
    assert "ml-course" not in html and 'id="no-sets"' in html
    theirs = other.version(version)
    for path in (theirs, theirs + "/progress"):
        assert client.get(path).status_code == 404, path
    r = other.post(f"/problemsets/ml-course/problems/softmax/versions/{version}/publish")
    assert r.status_code == 404
    r = other.upload(zip_package(slim(scaffold_files())))
    assert r.status_code == 404 and count(app, PackageVersion) == 1
    assert live_version(app) is None
    # A set of its own, of the same problem: still only its own on its page.
    assert other.make_set("theirs").status_code == 303
    html = client.get(other.problems).get_data(as_text=True)
    assert 'data-set="theirs"' in html and 'data-set="ml-course"' not in html
    assert 'data-set="theirs"' not in client.get(teacher.problems).get_data(as_text=True)


def test_only_a_ready_version_goes_live_and_a_rejudge_reports_what_changed(
        app: Flask, client: FlaskClient, teacher: Instructor) -> None:
    assert teacher.make_set().status_code == 303
    first = teacher.uploaded()
    files = slim(scaffold_files())
    files["statement.md"] += b"\nOne more line.\n"
    second = teacher.uploaded(files)
    publish = "/problemsets/ml-course/problems/softmax/versions/{}/publish"
    # Queued: refused with the reason, nothing changes.
    r = teacher.post(publish.format(second))
    assert r.status_code == 409 and "only a ready" in r.get_data(as_text=True)
    set_build(app, second, status=BuildStatus.FAILED, error="the reference is not accepted",
              steps=[{"subject": "reference", "expected": "accepted", "got": "wrong_answer",
                      "ok": False, "detail": "test one-row: values differ"}])
    html = client.get(teacher.version(second)).get_data(as_text=True)
    assert 'data-ok="false"' in html and ">FAIL<" in html and "values differ" in html
    assert 'id="build-error"' in html and 'data-progress-url' not in html
    r = teacher.post(publish.format(second))
    assert r.status_code == 409 and 'id="version-error"' in r.get_data(as_text=True)
    assert live_version(app) is None
    # Ready: the button, and the version goes live with a rejudge of the others.
    set_build(app, first, status=BuildStatus.READY, weaknesses=["no time limit example"],
              steps=[{"subject": "build", "expected": "ok", "got": "ok", "ok": True}])
    with app.extensions["jaxjudge"].db.session() as s:
        tenant_id = s.scalar(select(Tenant.id).where(Tenant.name == "course-a"))
        graded = new_id()
        s.add(Submission(id=graded, tenant_id=tenant_id, problem="ml-course/softmax",
                         problem_version="an-old-one", student_id="alice", code="x = 1\n",
                         code_sha256="0" * 64, queue="batch", status=Status.DONE,
                         verdict="accepted", score=1.0, max_score=1.0))
    html = client.get(teacher.version(first)).get_data(as_text=True)
    assert 'id="make-live-form"' in html and "no time limit example" in html
    r = teacher.post(publish.format(first), rejudge="1")
    assert r.status_code == 303 and r.headers["Location"].endswith(first)
    assert live_version(app) == first
    with app.extensions["jaxjudge"].db.session() as s:
        assert s.get(Submission, graded).status == Status.QUEUED  # type: ignore[union-attr]
    html = client.get(teacher.version(first)).get_data(as_text=True)
    assert 'data-testid="live"' in html and 'id="make-live-form"' not in html
    assert 'data-testid="rejudge" data-finished="false"' in html
    assert client.get(teacher.version(first) + "/progress").get_json()["done"] is False
    grade(app, graded, 0.0, Verdict.WRONG_ANSWER)
    html = client.get(teacher.version(first)).get_data(as_text=True)
    assert 'data-finished="true"' in html and 'data-testid="rejudge-changed">1<' in html
    assert "alice" in html and "wrong answer" in html and "an-old-one" in html
    assert client.get(teacher.version(first) + "/progress").get_json()["done"] is True
    listed = client.get(teacher.problems).get_data(as_text=True)
    assert listed.count('data-testid="live"') == 1


def test_an_lti_instructor_has_no_problem_pages(
        app: Flask, client: FlaskClient, keys: dict[str, str]) -> None:
    svc = app.extensions["jaxjudge"]
    with svc.db.session() as s:
        tenant_id = s.scalar(select(Tenant.id).where(Tenant.name == "course-a"))
    sid = Sessions(svc.redis, 60).start(Principal(
        tenant_id=tenant_id, role="instructor", via="lti", user_id="teacher", course_id=1))
    assert client.get(f"/app/{sid}/problemsets").status_code == 403
