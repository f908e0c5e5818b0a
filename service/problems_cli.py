"""``jaxjudge problems``: an author's commands against a running judge's REST API (an
instructor key), for packages kept in git:

    jaxjudge problems push DIR --set NAME [--slug S] [--publish] [--create-set]
    jaxjudge problems versions SET/SLUG
    jaxjudge problems publish SET/SLUG VERSION [--rejudge]

``push`` zips the package folder (without ``data/``, hidden files and ``__pycache__``),
uploads it, and follows its build and verification in the judge's sandbox, a line per
check as it ends; it exits 0 when the version is ready, 1 when a check failed (every
failure is printed with its reason) or the judge could not be reached, 2 when the upload
was refused (the one-line reason). The judge and the key come from ``--url`` and
``--key`` or ``JAXJUDGE_URL`` and ``JAXJUDGE_API_KEY``.
"""

from __future__ import annotations

import io
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, NoReturn

import click
import requests

from judge.errors import UsageError
from judge.nesting import TooDeep, load_json

SKIPPED = {"data", "__pycache__"}
MAX_ANSWER_BYTES = 16 << 20  # a version's answer lists its checks: some KiB


def package_zip(folder: Path) -> bytes:
    """The package folder as a zip, its files inside a folder of its name."""
    if not (folder / "problem.yaml").is_file():
        raise UsageError(f"{folder} is not a package folder (it has no problem.yaml)")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if (rel.parts[0] in SKIPPED or any(p.startswith(".") or p == "__pycache__"
                                               for p in rel.parts)
                    or not path.is_file() or path.is_symlink()):
                continue
            archive.write(path, f"{folder.name}/{rel.as_posix()}")
    return buffer.getvalue()


class Api:
    def __init__(self, url: str, key: str, timeout: float = 60.0) -> None:
        self.base = url.rstrip("/")
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"
        self.timeout = timeout

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        try:
            return self.session.request(method, self.base + path, timeout=self.timeout,
                                        stream=True, **kwargs)
        except requests.RequestException as exc:
            _fail(f"cannot reach the judge at {self.base}: {type(exc).__name__}", 1)

    def checked(self, method: str, path: str, ok: tuple[int, ...] = (200,),
                **kwargs: Any) -> requests.Response:
        r = self.call(method, path, **kwargs)
        if r.status_code not in ok:
            _refused(r)
        return r

    def answer(self, method: str, path: str, ok: tuple[int, ...] = (200,),
               **kwargs: Any) -> tuple[requests.Response, Any]:
        """:meth:`checked`, and its body read as JSON (:func:`read_answer`)."""
        r = self.checked(method, path, ok, **kwargs)
        return r, read_answer(r)


def _body(r: requests.Response) -> bytes | None:
    """The body of ``r``, None when it is over :data:`MAX_ANSWER_BYTES`."""
    body = bytearray()
    for chunk in r.iter_content(1 << 16):
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            r.close()
            return None
    return bytes(body)


def read_answer(r: requests.Response) -> Any:
    """The judge's answer as JSON, read as any JSON from outside is: at most
    :data:`MAX_ANSWER_BYTES`, nested at most :data:`judge.nesting.MAX_DEPTH` levels
    (requests' ``json()`` lets a ``RecursionError`` out); exits 1 with the reason if not."""
    what = f"the judge's answer to {r.request.method} {r.url}"
    body = _body(r)
    if body is None:
        _fail(f"{what} is larger than {MAX_ANSWER_BYTES} bytes", 1)
    try:
        return load_json(body)
    except TooDeep as exc:
        _fail(f"{what} is JSON {exc}", 1)
    except ValueError:
        _fail(f"{what} is not JSON (HTTP {r.status_code})", 1)


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"jaxjudge: error: {message}", err=True)
    sys.exit(code)


def _refused(r: requests.Response) -> NoReturn:
    try:
        found = load_json(_body(r) or b"")
        why = found.get("detail") or found.get("title") or r.reason
    except (ValueError, AttributeError):
        why = r.reason
    _fail(f"{r.status_code} {why}", 2 if 400 <= r.status_code < 500 else 1)


def _options(f: Any) -> Any:
    f = click.option("--key", envvar="JAXJUDGE_API_KEY", required=True,
                     help="An instructor API key (or JAXJUDGE_API_KEY).")(f)
    return click.option("--url", envvar="JAXJUDGE_URL", default="http://127.0.0.1:8000",
                        show_default=True, help="The judge's base URL (or JAXJUDGE_URL).")(f)


@click.group()
def problems() -> None:
    """Problem packages on a running judge: push, versions, publish."""


@problems.command("push")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--set", "set_name", required=True, help="The tenant's problem set.")
@click.option("--slug", default=None, help="The problem's slug (default: FOLDER's name).")
@click.option("--publish", is_flag=True, help="Make it live once verified (the first "
              "version of a problem always is).")
@click.option("--create-set", is_flag=True, help="Make the set first if the tenant has "
              "no set of that name.")
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Follow the build to its end.")
@click.option("--timeout", default=1800.0, show_default=True, help="Seconds to follow it.")
@_options
def push(folder: Path, set_name: str, slug: str | None, publish: bool, create_set: bool,
         wait: bool, timeout: float, url: str, key: str) -> None:
    """Upload the package in FOLDER as a new version of SET/SLUG and follow its build
    and verification in the judge's sandbox."""
    api = Api(url, key)
    data = package_zip(folder.resolve())
    if create_set and api.answer("GET", f"/v1/problemsets/{set_name}", ok=(200, 404)
                                 )[0].status_code == 404:
        api.answer("POST", "/v1/problemsets", ok=(201,), json={"name": set_name})
        click.echo(f"made the set {set_name}")
    params = {"slug": slug or folder.resolve().name, "publish": str(publish).lower()}
    r, body = api.answer("POST", f"/v1/problemsets/{set_name}/problems", ok=(200, 202),
                         data=data, params=params, headers={"Content-Type": "application/zip"})
    state = "uploaded" if r.status_code == 202 else "already uploaded"
    click.echo(f"{state} {body['problem']} version {body['version']} ({len(data)} bytes "
               f"zipped){'; left out: ' + ', '.join(body['ignored']) if body['ignored'] else ''}")
    if not wait:
        return
    location = r.headers["Location"]
    shown = 0
    deadline = time.monotonic() + timeout
    while True:
        _, body = api.answer("GET", location)
        for step in body["steps"][shown:]:
            mark = "ok  " if step["ok"] else "FAIL"
            extra = f"  ({step['detail']})" if step["detail"] and not step["ok"] else ""
            click.echo(f"{mark}  {step['subject']}: {step['got']}{extra}")
        shown = len(body["steps"])
        if body["status"] in ("ready", "failed"):
            break
        if time.monotonic() > deadline:
            _fail(f"still {body['status']} after {timeout:g} s ({shown} of {body['total']} "
                  "checks); follow it with `jaxjudge problems versions`", 1)
        time.sleep(0.25)  # the build endpoint has no long-poll; a check takes ~a second
    for weakness in body["weaknesses"]:
        click.echo(f"weak  {weakness}")
    if body["status"] == "failed":
        _fail(f"version {body['version']} failed: {body['error']}", 1)
    live = "live" if body["live"] else "ready (not live: `jaxjudge problems publish`)"
    click.echo(f"{body['problem']} version {body['version']} is {live}, built in "
               f"{body['build_seconds']:.1f} s")


@problems.command("versions")
@click.argument("problem")
@_options
def versions(problem: str, url: str, key: str) -> None:
    """Every version of PROBLEM (SET/SLUG), newest first."""
    set_name, _, slug = problem.partition("/")
    _, body = Api(url, key).answer("GET", f"/v1/problemsets/{set_name}/problems/{slug}/versions")
    for item in body["items"]:
        live = "live" if item["live"] else ""
        click.echo(f"{item['version']}\t{item['status']}\t{item['done']}/{item['total']}\t"
                   f"{item['uploaded_at']}\t{live}")


@problems.command("publish")
@click.argument("problem")
@click.argument("version")
@click.option("--rejudge", is_flag=True, help="Grade the problem's submissions again "
              "against this version.")
@_options
def publish_version(problem: str, version: str, rejudge: bool, url: str, key: str) -> None:
    """Make VERSION of PROBLEM (SET/SLUG) the live one."""
    set_name, _, slug = problem.partition("/")
    _, body = Api(url, key).answer(
        "POST", f"/v1/problemsets/{set_name}/problems/{slug}/versions/{version}/publish",
        json={"rejudge": rejudge})
    click.echo(f"{body['problem']} is live at {body['live_version']}")
    if body.get("rejudge"):
        click.echo(f"rejudging {body['rejudge']['rejudged']} submission(s): "
                   f"/v1/rejudges/{body['rejudge']['rejudge']}")
