"""Serving the built book on 127.0.0.1 and driving it in headless Chromium with the network blocked."""
from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 at a free port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class PageWatch:
    """Collects console errors, failed requests and blocked (off-machine) requests of one page."""

    def __init__(self, page, base_url: str):
        self.console_errors: list[str] = []
        self.failed: list[str] = []
        self.blocked: list[str] = []
        page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.console_errors.append(str(e)))
        page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})")
                if not r.url.startswith("data:") and r.url not in self.blocked else None)

        def route(r):
            if r.request.url.startswith(base_url) or r.request.url.startswith("data:"):
                r.continue_()
            else:
                self.blocked.append(r.request.url)
                r.abort()

        page.route("**/*", route)


def require_book() -> bool:
    """make test-browser sets REQUIRE_BOOK=1: a missing build is then a failure, not a skip."""
    return os.environ.get("REQUIRE_BOOK") == "1"


def missing_build(message: str) -> None:
    """A test of the built book whose build is missing: skipped, or failed under REQUIRE_BOOK=1."""
    import pytest
    if require_book():
        pytest.fail(message)
    pytest.skip(message)
