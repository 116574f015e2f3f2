"""A live HTTP server for tests: Django's threaded WSGI server in a thread of the test process.

It sees the test's settings (one process), and stopping it waits for every request thread, an
event stream's too, so nothing of a test runs on after it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from django.core.handlers.wsgi import WSGIHandler
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler


class _Server(ThreadedWSGIServer):
    daemon_threads = False  # server_close() joins the request threads
    block_on_close = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Tests read statuses from their clients; the access log would only be noise."""


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """Serve the project on a free port of 127.0.0.1; yields the base URL."""
    httpd = _Server(("127.0.0.1", 0), _QuietHandler, allow_reuse_address=True)
    httpd.set_app(WSGIHandler())
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="live-http")
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
