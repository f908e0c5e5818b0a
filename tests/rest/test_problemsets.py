"""Tenants' own problem sets through the API, without a worker: making sets, uploading
packages (stored as queued versions), what another tenant sees of them (nothing), the
hostile packages refused with nothing stored, and quotas."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from packages_support import scaffold_files, slim, zip_package
from service_fixtures import auth
from sqlalchemy import func, select

from judge.build import build
from judge.problem import Problem
from judge.sandbox import get_sandbox
from judge.settings import Settings
from service.models import BuildStatus, Package, PackageVersion, ProblemSet, Tenant
from service.packages import files_under, pack, unpack

pytestmark = pytest.mark.service


def make_set(client: FlaskClient, key: str, name: str = "ml-course") -> Any:
    return client.post("/v1/problemsets", json={"name": name, "title": "ML"},
                       headers=auth(key))


def upload(client: FlaskClient, key: str, data: bytes, name: str = "ml-course",
           query: str = "") -> Any:
    return client.post(f"/v1/problemsets/{name}/problems{query}", data=data,
                       content_type="application/zip", headers=auth(key))


def count(app: Flask, model: type) -> int:
    with app.extensions["jaxjudge"].db.session() as s:
        return s.scalar(select(func.count()).select_from(model)) or 0


@pytest.fixture
def uploaded(client: FlaskClient, keys: dict[str, str]) -> dict[str, Any]:
    assert make_set(client, keys["instructor"]).status_code == 201
    r = upload(client, keys["instructor"], zip_package(slim(scaffold_files())))
    assert r.status_code == 202, r.get_json()
    body: dict[str, Any] = r.get_json()
    return body


def test_an_upload_is_stored_as_a_queued_version_and_the_same_files_are_the_same_version(
        client: FlaskClient, keys: dict[str, str], uploaded: dict[str, Any]) -> None:
    assert uploaded["problem"] == "ml-course/softmax"
    assert uploaded["status"] == "queued" and not uploaded["live"]
    assert uploaded["total"] == 4 + 2  # build, data, inputs, reference + two examples
    again = upload(client, keys["instructor"], zip_package(slim(scaffold_files())))
    assert again.status_code == 200
    assert again.get_json()["version"] == uploaded["version"]
    changed = slim(scaffold_files())
    changed["statement.md"] += b"\nOne more line.\n"
    other = upload(client, keys["instructor"], zip_package(changed))
    assert other.status_code == 202 and other.get_json()["version"] != uploaded["version"]
    listed = client.get("/v1/problemsets/ml-course/problems/softmax/versions",
                        headers=auth(keys["instructor"])).get_json()
    assert [v["version"] for v in listed["items"]] == [other.get_json()["version"],
                                                        uploaded["version"]]
    assert listed["live_version"] is None  # nothing is live before it is built


def built_here(app: Flask, version: str, tmp_path: Path) -> None:
    """Make the stored version ready and live as its build would, the reference run here
    in the process sandbox (the test's own package: trusted)."""
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.scalar(select(PackageVersion).where(PackageVersion.version == version))
        assert row is not None
        root = tmp_path / "built"
        unpack(row.files, root)
        settings = Settings(sandbox="process")
        sandbox = get_sandbox("process", settings)
        try:
            build(Problem.load("ml-course/softmax", root, version=version), sandbox=sandbox,
                  settings=settings)
        finally:
            sandbox.close()
        row.data, row.status = pack(files_under(root / "data")), BuildStatus.READY
        package = s.get(Package, row.package_id)
        assert package is not None
        package.live_version = version


def test_a_set_and_its_problems_are_invisible_to_another_tenant(
        app: Flask, client: FlaskClient, keys: dict[str, str],
        uploaded: dict[str, Any], tmp_path: Path) -> None:
    built_here(app, uploaded["version"], tmp_path)
    other = auth(keys["other"])
    assert client.get("/v1/problemsets/ml-course", headers=other).status_code == 404
    names = [i["name"] for i in client.get("/v1/problemsets", headers=other).get_json()["items"]]
    assert "ml-course" not in names and "demo" in names
    assert upload(client, keys["other"], zip_package(slim(scaffold_files()))).status_code == 404
    for path in ("/v1/problemsets/ml-course/problems/softmax/versions",
                 f"/v1/problemsets/ml-course/problems/softmax/versions/{uploaded['version']}"):
        assert client.get(path, headers=other).status_code == 404
    r = client.post(f"/v1/problemsets/ml-course/problems/softmax/versions/"
                    f"{uploaded['version']}/publish", json={}, headers=other)
    assert r.status_code == 404
    listed = client.get("/v1/problems", headers=other).get_json()
    assert all(not i["id"].startswith("ml-course/") for i in listed["items"] + listed["broken"])
    r = client.get("/v1/problems/ml-course/softmax", headers=other)
    assert r.status_code == 404 and "ml-course" not in r.get_json()["detail"].replace(
        "'ml-course/softmax'", "")  # no close match drawn from another tenant's sets
    r = client.post("/v1/submissions", json={"problem": "ml-course/softmax", "code": "x"},
                    headers=other)
    assert r.status_code == 404
    r = client.post("/v1/launch-links", json={"problem": "ml-course/softmax",
                                              "student_id": "s1"}, headers=other)
    assert r.status_code == 404
    r = client.post("/v1/problems/ml-course/softmax/rejudge", headers=other)
    assert r.status_code == 404
    # The owner sees it everywhere.
    mine = auth(keys["instructor"])
    assert "ml-course/softmax" in [i["id"] for i in
                                   client.get("/v1/problems", headers=mine).get_json()["items"]]
    assert client.get("/v1/problems/ml-course/softmax", headers=mine).status_code == 200
    r = client.post("/v1/launch-links", json={"problem": "ml-course/softmax",
                                              "student_id": "s1"}, headers=mine)
    assert r.status_code == 201


def test_set_names_cannot_shadow_the_global_sets_or_another_tenants(
        client: FlaskClient, keys: dict[str, str]) -> None:
    assert make_set(client, keys["instructor"]).status_code == 201
    taken = make_set(client, keys["other"])
    assert taken.status_code == 409 and "taken" in taken.get_json()["detail"]
    r = make_set(client, keys["other"], "demo")  # a folder of the server's problems
    assert r.status_code == 409 and "judge's own" in r.get_json()["detail"]
    r = make_set(client, keys["other"], "Bad_Name")
    assert r.status_code == 422
    assert make_set(client, keys["client"], "by-a-client").status_code == 403


def _symlinked() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in slim(scaffold_files()).items():
            z.writestr("softmax/" + name, data)
        info = zipfile.ZipInfo("softmax/submissions/accepted/link.py")
        info.external_attr = 0o120777 << 16
        z.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def _bomb() -> bytes:
    files = slim(scaffold_files())
    files["statement.md"] = b"a" * (3 << 20)  # 3 MiB that compress to about 3 KiB
    return zip_package(files)


def _yaml(text: str) -> bytes:
    files = slim(scaffold_files())
    files["problem.yaml"] = text.encode()
    return zip_package(files)


def _replace_in_yaml(old: str, new: str) -> bytes:
    files = slim(scaffold_files())
    files["problem.yaml"] = files["problem.yaml"].replace(old.encode(), new.encode())
    assert files["problem.yaml"].count(new.encode()) >= 1
    return zip_package(files)


LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}]\n" for i in range(8))
BILLION_TESTS = "".join(f"    - {{name: t{i}, args: {{x: {{normal: [2, 2]}}}}}}\n"
                        for i in range(600))


@pytest.mark.parametrize(("data", "says"), [
    (b"not a zip", "not a valid zip archive"),
    (zip_package({"../problem.yaml": b"x"}, folder=None), "escapes the archive"),
    (zip_package({"/etc/problem.yaml": b"x"}, folder=None), "absolute path"),
    (_symlinked(), "is a symlink"),
    (_bomb(), "zip bomb"),
    (zip_package({"statement.md": b"hi"}), "has no problem.yaml"),
    (_yaml(LAUGHS), "anchors or aliases"),
    (_replace_in_yaml("    - {name: one-row,", BILLION_TESTS + "    - {name: one-row,"),
     "declares 609 tests; the limit is 500"),
    (_replace_in_yaml("{name: allclose,", "{name: no-such-checker,"), "unknown checker"),
    (_replace_in_yaml("  seed:", "  generator: gen.py\n  seed:"), "tests.generator"),
    (_replace_in_yaml("checker:", "reference: ../../etc/passwd\nchecker:"), "reference"),
    (_replace_in_yaml("normal: [64, 8]", "normal: [100000, 100000]"), "MiB"),
    (_replace_in_yaml("memory_mb: 2048", "memory_mb: 65536"), "memory_mb is 65536"),
    (_replace_in_yaml("test_seconds: 5,", "test_seconds: 600,"), "test_seconds is 600"),
    (zip_package({**slim(scaffold_files()), "submissions/crashes/x.py": b"x = 1\n"}),
     "example submissions are submissions/<verdict>/<name>.py"),
    (zip_package({**slim(scaffold_files()), "reference.py": b"\xff\xfe"}), "not UTF-8"),
], ids=["not-zip", "traversal", "absolute", "symlink", "zip-bomb", "no-yaml", "yaml-bomb",
        "billion-tests", "unknown-checker", "generator", "reference-outside", "huge-inputs",
        "memory", "time", "bad-verdict-folder", "not-utf8"])
def test_a_hostile_package_is_refused_with_a_reason_and_nothing_is_stored(
        app: Flask, client: FlaskClient, keys: dict[str, str], data: bytes, says: str) -> None:
    assert make_set(client, keys["instructor"]).status_code == 201
    r = upload(client, keys["instructor"], data)
    assert r.status_code in (413, 422), r.get_json()
    assert r.headers["Content-Type"] == "application/problem+json"
    assert says in r.get_json()["detail"], r.get_json()["detail"]
    assert "\n" not in r.get_json()["detail"]
    assert count(app, Package) == 0 and count(app, PackageVersion) == 0


def test_an_upload_needs_a_slug_and_a_zip(client: FlaskClient, keys: dict[str, str]) -> None:
    assert make_set(client, keys["instructor"]).status_code == 201
    r = upload(client, keys["instructor"], zip_package(slim(scaffold_files()), folder=None))
    assert r.status_code == 422 and "slug" in r.get_json()["detail"]
    r = upload(client, keys["instructor"], zip_package(slim(scaffold_files()), folder=None),
               query="?slug=softmax")
    assert r.status_code == 202 and r.get_json()["problem"] == "ml-course/softmax"
    r = client.post("/v1/problemsets/ml-course/problems", json={"x": 1},
                    headers=auth(keys["instructor"]))
    assert r.status_code == 415


def set_quotas(app: Flask, tenant: str, **quotas: Any) -> None:
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.scalar(select(Tenant).where(Tenant.name == tenant))
        assert row is not None
        row.quotas = quotas


def test_quotas_on_sets_problems_versions_and_package_size(
        app: Flask, client: FlaskClient, keys: dict[str, str]) -> None:
    set_quotas(app, "course-a", sets=1, problems=1, versions=2, package_bytes=20000)
    assert make_set(client, keys["instructor"]).status_code == 201
    r = make_set(client, keys["instructor"], "second")
    assert r.status_code == 403 and "quota of 1 problem sets" in r.get_json()["detail"]
    assert count(app, ProblemSet) == 1
    files = slim(scaffold_files())
    assert upload(client, keys["instructor"], zip_package(files)).status_code == 202
    r = upload(client, keys["instructor"], zip_package(files, folder="another"))
    assert r.status_code == 403 and "quota of 1 problems" in r.get_json()["detail"]
    files["statement.md"] += b"v2"
    assert upload(client, keys["instructor"], zip_package(files)).status_code == 202
    files["statement.md"] += b"v3"
    r = upload(client, keys["instructor"], zip_package(files))
    assert r.status_code == 403 and "package versions" in r.get_json()["detail"]
    files["statement.md"] += b"x" * 20000
    r = upload(client, keys["instructor"], zip_package(files))
    assert r.status_code == 422 and "over the limit of 20000 bytes" in r.get_json()["detail"]
    # Another tenant's quotas are its own.
    assert make_set(client, keys["other"], "b-one").status_code == 201
    assert make_set(client, keys["other"], "b-two").status_code == 201
