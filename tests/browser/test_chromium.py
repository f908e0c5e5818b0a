"""The browser the other tests drive is what they claim: Chromium that blocks
third-party cookies, with the LMS and the tool on two sites."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import chromium_options, start_chromium, wait

pytestmark = [pytest.mark.browser]

PROBE = ("document.cookie = 'probe=1; SameSite=None; Secure; Path=/';"
         "return document.cookie;")


class _Pages(BaseHTTPRequestHandler):
    """``/outer`` frames ``http://127.0.0.1:<port>/inner``; ``/inner`` sets a cookie."""

    def do_GET(self) -> None:  # noqa: N802
        port = self.server.server_address[1]
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        if self.path == "/outer":
            body = f'<iframe id="tool" src="http://127.0.0.1:{port}/inner"></iframe>'
        else:
            self.send_header("Set-Cookie", "served=1; SameSite=None; Secure; Path=/")
            body = "<p id='inner'>tool</p>"
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def two_sites() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()


def framed_cookies(port: int, block: bool) -> str:
    """The cookies the framed 127.0.0.1 page keeps (one from its response, one set by
    its script) when localhost frames it."""
    driver = start_chromium(chromium_options(block_third_party_cookies=block))
    try:
        driver.get(f"http://localhost:{port}/outer")
        driver.switch_to.frame(driver.find_element(By.ID, "tool"))
        wait(driver, 30).until(lambda d: d.find_elements(By.ID, "inner"))
        cookies: str = driver.execute_script(PROBE)
        return cookies
    finally:
        driver.quit()


def test_the_tests_browser_blocks_third_party_cookies(two_sites: int) -> None:
    # The control: the same frame in a browser that allows them keeps both cookies, so
    # the empty jar below is the blocking, not http or the page.
    assert sorted(framed_cookies(two_sites, block=False).split("; ")) == [
        "probe=1", "served=1"]
    assert framed_cookies(two_sites, block=True) == ""


def test_a_first_party_page_keeps_its_cookies_in_the_same_browser(two_sites: int) -> None:
    driver = start_chromium(chromium_options())
    try:
        driver.get(f"http://127.0.0.1:{two_sites}/inner")
        assert sorted(driver.execute_script(PROBE).split("; ")) == ["probe=1", "served=1"]
    finally:
        driver.quit()
