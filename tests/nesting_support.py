"""Documents nested deeply (issue 20: a ``problem.yaml`` 50,000 deep killed an API worker
with SIGSEGV; JSON 50,000 or 100,000 deep was a 500), and an HTTP server that answers
every request with one fixed body, to stand for a platform or a judge that answers such
a document."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from servers import free_port

DEEP = 50_000


def nested_list(levels: int = DEEP, inner: str = "") -> str:
    """``[[[...inner...]]]``: ``inner`` inside ``levels`` lists (JSON, and YAML's flow
    style)."""
    return "[" * levels + inner + "]" * levels


def nested_object(levels: int = DEEP, inner: str = "1") -> str:
    """``{"a": {"a": ... inner ...}}``: ``inner`` inside ``levels`` objects."""
    return '{"a": ' * levels + inner + "}" * levels


def notebook(metadata: str = "{}") -> str:
    """A notebook (nbformat 4.5) with one code cell, its metadata the JSON ``metadata``."""
    cell = ('{"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": null, '
            '"outputs": [], "source": "def layout(num_devices, kernel_in, kernel_out):\\n'
            '    return [kernel_in, kernel_out // num_devices]\\n"}')
    return (f'{{"nbformat": 4, "nbformat_minor": 5, "metadata": {metadata}, '
            f'"cells": [{cell}]}}')


@contextmanager
def answering(body: bytes, *, paths: dict[str, bytes] | None = None,
              content_type: str = "application/json") -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering every GET and POST with ``body`` (200), or
    with ``paths[path]`` for a path listed there; its base URL (no trailing slash) while
    the block runs."""
    answers = paths or {}

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            found = answers.get(self.path.split("?", 1)[0], body)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(found)))
            self.end_headers()
            self.wfile.write(found)

        do_GET = do_POST = _answer

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
