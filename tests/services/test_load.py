"""200 submissions sent at once by concurrent clients to the API served by gunicorn:
no request gets a 5xx, and every submission ends done with the right verdict.

The worker grades in the zygote sandbox, as the service's workers do (compose.yaml): the
test is about the API and the queue under load, not the sandbox, and a container per
submission (the docker sandbox, even from a warm pool) made it grade for minutes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from servers import Gunicorn, Worker, service_env, wait_for

from judge.settings import Settings
from service.db import Database
from service.keys import create_key
from service.settings import ServiceSettings
from tests_support import LAYOUT_GOOD as GOOD
from tests_support import LAYOUT_WRONG as WRONG

pytestmark = [pytest.mark.service, pytest.mark.slow]


@pytest.fixture
def server(service_settings: ServiceSettings, judge_settings: Settings,
           tmp_path: Path) -> Iterator[str]:
    env = service_env({**service_settings.model_dump(), **judge_settings.model_dump()})
    api = Gunicorn(env, tmp_path / "gunicorn.log")
    yield api.base
    api.stop()


def test_200_concurrent_submissions(server: str, service_settings: ServiceSettings,
                                    start_worker: Callable[..., Worker]) -> None:
    with Database(service_settings.database_url).session() as s:
        key = create_key(s, "course-a", "client")
    headers = {"Authorization": f"Bearer {key}"}
    start_worker("-Q", "interactive,batch", "--concurrency", "2", sandbox="zygote")
    expected = {f"s{i:03d}": "accepted" if i % 3 else "wrong_answer" for i in range(200)}

    def post(student: str) -> tuple[str, int, str]:
        code = GOOD if expected[student] == "accepted" else WRONG
        with requests.Session() as http:
            r = http.post(f"{server}/v1/submissions", headers=headers, timeout=60,
                          json={"problem": "demo/layout", "code": code, "student_id": student})
        return student, r.status_code, r.json().get("id", "")

    with ThreadPoolExecutor(max_workers=50) as pool:
        answers = list(pool.map(post, expected))
    assert [s for _, s, _ in answers if s >= 500] == []
    assert {s for _, s, _ in answers} == {202}

    def all_done() -> dict[str, str] | None:
        r = requests.get(f"{server}/v1/submissions?status=done&limit=200", headers=headers,
                         timeout=30)
        assert r.status_code == 200
        items = r.json()["items"]
        return {i["student_id"]: i["verdict"] for i in items} if len(items) == 200 else None

    verdicts = wait_for(all_done, 900, "200 verdicts", every=2)
    assert verdicts == expected
