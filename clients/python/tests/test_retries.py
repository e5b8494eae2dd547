"""Retries on 429 and 503, against a scripted HTTP server on loopback."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from muisti import AsyncClient, Client, RateLimitError, UnavailableError


class Scripted:
    """Answers each request with the next scripted (status, headers, body)."""

    def __init__(self, script):
        self.script = list(script)
        self.seen: list[tuple[str, float]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                outer.seen.append((self.path, time.monotonic()))
                status, headers, body = outer.script.pop(0) if outer.script else (500, {}, {})
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


LIMITED = (429, {"retry-after": "0.3"}, {"error": {"code": "rate_limited", "message": "slow down"}})
DOWN = (503, {}, {"error": {"code": "unavailable", "message": "store unavailable"}})
STATS = (200, {}, {"tenant": "default", "backend": "sqlite", "healthy": True, "namespaces": [], "total": 0})


def test_429_is_retried_after_the_servers_retry_after():
    s = Scripted([LIMITED, STATS])
    try:
        stats = Client(s.url, backoff=0.01).stats()
        assert stats.backend == "sqlite"
        assert len(s.seen) == 2
        assert s.seen[1][1] - s.seen[0][1] >= 0.25, "Retry-After was not honoured"
    finally:
        s.close()


def test_503_is_retried_then_raised_typed_when_retries_run_out():
    s = Scripted([DOWN, DOWN, DOWN])
    try:
        with pytest.raises(UnavailableError) as down:
            Client(s.url, max_retries=2, backoff=0.01).stats()
        assert down.value.status == 503 and down.value.code == "unavailable"
        assert len(s.seen) == 3
    finally:
        s.close()


def test_no_retries_means_the_first_429_is_raised_with_its_retry_after():
    s = Scripted([LIMITED, STATS])
    try:
        with pytest.raises(RateLimitError) as limited:
            Client(s.url, max_retries=0).stats()
        assert limited.value.retry_after == pytest.approx(0.3)
        assert len(s.seen) == 1
    finally:
        s.close()


async def test_the_async_client_retries_too():
    s = Scripted([DOWN, LIMITED, STATS])
    try:
        async with AsyncClient(s.url, backoff=0.01) as c:
            assert (await c.stats()).healthy is True
        assert len(s.seen) == 3
    finally:
        s.close()


def test_a_refused_connection_is_retried_then_a_connection_error():
    from muisti import ConnectionError as MuistiConnectionError

    with pytest.raises(MuistiConnectionError) as failed:
        Client("http://127.0.0.1:9", max_retries=1, backoff=0.01).stats()
    assert failed.value.url == "http://127.0.0.1:9"
