"""The browser tests' world: a live jaxjudge and real Chromium.

One stack for the whole folder (a package fixture: it starts in seconds, once), every
piece a real process on 127.0.0.1: its own Redis (the session's is flushed by other
tests), a migrated SQLite file, the API and pages served by gunicorn's gevent workers as
in production, a Celery worker grading in the zygote sandbox (hardened Docker containers,
as in production) and delivering webhooks and scores, and the sweeper. The test LMS
(:mod:`tests.lti.platform`) runs at ``http://localhost:<port>`` and the tool at
``http://127.0.0.1:<port>``: two sites, so the tool inside the LMS's course page is a
third-party frame, and the browser blocks third-party cookies, as Safari does and Chrome
can.

Tests keep apart by their data (each makes its own users and resource links), not by
order. Each page a test visits is saved as ``var/screenshots/<test>-<page>.png`` (and at
phone width, ``...-<page>-phone.png``); with ``JAXJUDGE_DOCS_SCREENSHOTS=1`` (``make
screenshots``) one current picture of each page goes to ``docs/screenshots/<page>.png``.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait
from servers import Gunicorn, RedisServer, Sweeper, Worker, free_port, service_env, wait_for
from service_fixtures import FAST, wait_ready

from judge.settings import REPO_ROOT, Settings
from service.db import Database
from service.keys import create_key
from service.migrate import upgrade
from service.queue import BATCH, INTERACTIVE, WEBHOOKS
from service.settings import ServiceSettings
from tests_support import FIXTURE_PROBLEMS

CHROMIUM = Path(os.environ.get("JAXJUDGE_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("JAXJUDGE_CHROMEDRIVER", "/usr/bin/chromedriver"))
SHOTS = REPO_ROOT / "var" / "screenshots"
DOCS_SHOTS = REPO_ROOT / "docs" / "screenshots"
DOCS_PHONE = {"student-page", "student-verdict", "instructor-course"}  # in docs at phone width
WIDE = (1280, 900)
PHONE = (390, 844)
WAIT = 120  # seconds an explicit wait may take (a grading in a cold sandbox)
TENANT = "browser-course"

# Chromium's content-settings value: 1 blocks third-party cookies (0 allows them).
BLOCK_THIRD_PARTY_COOKIES = {"profile.cookie_controls_mode": 1,
                             "profile.block_third_party_cookies": True}


@dataclass
class Stack:
    """The running jaxjudge, and handles on what it stores."""

    base: str  # the tool, http://127.0.0.1:<port>
    settings: ServiceSettings
    judge: Settings
    db: Database
    folder: Path
    redis: RedisServer
    worker: Worker
    platform: Any = None  # the test LMS (tests.lti.platform.TestPlatform, .lms its pages)
    keys: dict[str, str] = field(default_factory=dict)  # API keys of TENANT by role

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def auth(self, role: str = "admin") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[role]}"}

    def launch_link(self, student_id: str, problem: str = "demo/layout",
                    **extra: Any) -> str:
        """A launch link minted through the REST API (POST /v1/launch-links)."""
        r = requests.post(self.url("/v1/launch-links"), headers=self.auth("instructor"),
                          json={"problem": problem, "student_id": student_id, **extra},
                          timeout=30)
        assert r.status_code == 201, r.text
        url: str = r.json()["url"]
        return url


def unique(prefix: str) -> str:
    """A name no other test (or run) uses: tests keep apart by their data."""
    return f"{prefix}-{secrets.token_hex(4)}"


def _grading_queues() -> str:
    """Every queue the service publishes to, so the one worker serves them all."""
    import service.queue as q

    names = [INTERACTIVE, BATCH, WEBHOOKS, getattr(q, "SCORES", None), getattr(q, "LTI", None)]
    return ",".join(dict.fromkeys(n for n in names if isinstance(n, str)))


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("browser-stack")
    redis = RedisServer(folder / "redis")
    redis.start()
    database_url = f"sqlite:///{folder / 'jaxjudge.db'}"
    upgrade(database_url)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    settings = ServiceSettings(**{
        **FAST, "database_url": database_url, "redis_url": redis.url,
        "secret_key": secrets.token_urlsafe(32), "public_url": base,
        "webhook_allow": ["127.0.0.1", "localhost", "::1"], "lti_backoff_seconds": 0.5,
        "lti_roster_max_age_seconds": 0, "packages_dir": folder / "packages"})
    judge = Settings(problems_dir=FIXTURE_PROBLEMS, sandbox="zygote")
    env = service_env({**settings.model_dump(), **judge.model_dump()})
    db = Database(database_url)
    with db.session() as s:
        keys = {role: create_key(s, TENANT, role) for role in ("client", "instructor")}
    started: list[Any] = []
    try:
        worker = Worker(env, folder / "worker.log", "-Q", _grading_queues(),
                        "--concurrency", "1")
        started.append(worker)
        started.append(Sweeper(env, folder / "sweeper.log"))
        started.append(Gunicorn(env, folder / "gunicorn.log", port=port))
        wait_ready(settings)
        found = Stack(base=base, settings=settings, judge=judge, db=db, folder=folder,
                      redis=redis, worker=worker, keys=keys)
        found.platform = _platform(found, started)
        yield found
    finally:
        for process in reversed(started):
            process.stop()
        db.engine.dispose()
        redis.stop()


def _platform(stack: Stack, started: list[Any]) -> Any:
    """The test LMS at http://localhost:<port>, registered with the tenant, with its
    course pages (:mod:`tests.browser.lms_page`)."""
    from tests.browser.lms_page import start_platform

    return start_platform(stack, started)


# -- Chromium


def chromium_options(size: tuple[int, int] = WIDE, downloads: Path | None = None,
                     block_third_party_cookies: bool = True) -> webdriver.ChromeOptions:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
                f"--window-size={size[0]},{size[1]}"):
        options.add_argument(arg)
    prefs: dict[str, Any] = {"profile.cookie_controls_mode": 0}
    if block_third_party_cookies:
        prefs.update(BLOCK_THIRD_PARTY_COOKIES)
    if downloads is not None:
        prefs.update({"download.default_directory": str(downloads),
                      "download.prompt_for_download": False,
                      "download.directory_upgrade": True,
                      "safebrowsing.enabled": False})
    options.add_experimental_option("prefs", prefs)
    return options


def start_chromium(options: webdriver.ChromeOptions, size: tuple[int, int] = WIDE) -> WebDriver:
    """Chromium whose viewport (not window) is ``size``."""
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    if tuple(inner) != size:
        driver.set_window_size(2 * size[0] - inner[0], 2 * size[1] - inner[1])
    return driver


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    folder = tmp_path / "downloads"
    folder.mkdir()
    return folder


@pytest.fixture
def browser(downloads: Path, request: pytest.FixtureRequest) -> Iterator[WebDriver]:
    """Headless Chromium, 1280x900, third-party cookies blocked, downloads into
    ``downloads``. A failing test leaves ``var/screenshots/<test>-failed.png``."""
    driver = start_chromium(chromium_options(downloads=downloads))
    driver.execute_cdp_cmd("Page.setDownloadBehavior",
                           {"behavior": "allow", "downloadPath": str(downloads)})
    yield driver
    quit_with_shot(driver, request, SHOTS)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


def _test_name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).removeprefix("test_")


Shoot = Callable[..., Path]


@pytest.fixture
def shoot(request: pytest.FixtureRequest) -> Shoot:
    """``shoot(driver, page, phone=True, at=None, docs=False)``: the viewport (scrolled
    to the element of id ``at``) as ``var/screenshots/<test>-<page>.png``; with
    ``phone``, also at 390x844 (then back), checking that nothing is wider than the
    phone. With ``docs`` (the one current picture of a page) and
    ``JAXJUDGE_DOCS_SCREENSHOTS=1``, they are copied to ``docs/screenshots/<page>.png``."""
    test = _test_name(request)

    def take(driver: WebDriver, page: str, phone: bool = True, at: str | None = None,
             docs: bool = False) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        show = (f"document.getElementById({at!r}).scrollIntoView({{block: 'start'}})"
                if at else "")
        if show:
            driver.execute_script(show)
        wide = SHOTS / f"{test}-{page}.png"
        driver.save_screenshot(str(wide))
        taken = [(wide, f"{page}.png")]
        if phone:
            narrow = SHOTS / f"{test}-{page}-phone.png"

            def phone_shot() -> None:
                if show:
                    driver.execute_script(show)
                driver.save_screenshot(str(narrow))

            width = phone_width(driver, phone_shot)
            taken.append((narrow, f"{page}-phone.png"))
            assert width <= PHONE[0], f"{page} is {width} px wide at phone width"
        if docs and os.environ.get("JAXJUDGE_DOCS_SCREENSHOTS") == "1":
            DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
            for path, name in taken:
                if name.endswith("-phone.png") and page not in DOCS_PHONE:
                    continue
                shutil.copyfile(path, DOCS_SHOTS / name)
        return wide

    return take


def phone_width(driver: WebDriver, then: Callable[[], Any]) -> int:
    """Show the page as a phone does (390x844, mobile viewport), run ``then``; the
    document's width there (wider than 390: it scrolls sideways)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 1, "mobile": True})
    try:
        width: int = WebDriverWait(driver, 10).until(
            lambda d: d.execute_script(
                "return window.innerWidth <= arguments[0] && "
                "document.documentElement.scrollWidth", PHONE[0]))
        then()
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return width


def wait(driver: WebDriver, timeout: float = WAIT) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, timeout)


def api_done(stack: Stack, submission_id: str) -> dict[str, Any]:
    """A submission once done, asked of the REST API with the instructor's key."""
    def check() -> dict[str, Any] | None:
        body: dict[str, Any] = requests.get(
            stack.url(f"/v1/submissions/{submission_id}?wait=2"),
            headers=stack.auth("instructor"), timeout=30).json()
        return body if body.get("status") == "done" else None

    found: dict[str, Any] = wait_for(check, WAIT, f"submission {submission_id} done")
    return found


def quit_with_shot(driver: Any, request: pytest.FixtureRequest, shots: Path) -> None:
    """Quit ``driver``, first saving a screenshot to ``shots`` when the test failed."""
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        shots.mkdir(parents=True, exist_ok=True)
        driver.switch_to.default_content()
        driver.save_screenshot(str(shots / f"{_test_name(request)}-failed.png"))
    driver.quit()
