"""moorage.image.client against listings a real Glance would not give, served by a
stand-in on a free port (a SIMULATION of a broken or foreign image service): a ``next``
link that comes back to a page already read, an answer that is not a listing, and
Glance's root-relative ``next`` links under an endpoint with a path. Every page of a
real image service's listing is read in tests/functional/cli/test_os_cloud.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from moorage.image.client import GlanceClient, GlanceError
from moorage.service_auth import DevelopmentToken

Answer = Callable[[str, dict[str, list[str]]], tuple[int, object]]


@pytest.fixture
def standin() -> Iterator[Callable[[Answer], str]]:
    servers: list[ThreadingHTTPServer] = []

    def serve(answer: Answer) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                status, body = answer(parts.path, parse_qs(parts.query))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def _records(*ids: str) -> list[dict[str, str]]:
    return [{"id": i, "status": "active", "disk_format": "raw"} for i in ids]


def test_root_relative_next_links_are_followed_under_a_path(
        standin: Callable[[Answer], str]) -> None:
    pages = {"": (_records("a", "b"), "b"), "b": (_records("c", "d"), "d"),
             "d": (_records("e"), None)}
    asked: list[str] = []

    def answer(path: str, query: dict[str, list[str]]) -> tuple[int, object]:
        asked.append(path)
        records, last = pages[query.get("marker", [""])[0]]
        body: dict[str, object] = {"images": records}
        if last is not None:
            body["next"] = f"/v2/images?marker={last}&limit=2"  # Glance's: root-relative
        return 200, body

    url = standin(answer) + "/image"
    client = GlanceClient(DevelopmentToken(url + "/v2", "t"), page_size=2)
    assert [r["id"] for r in client.images()] == ["a", "b", "c", "d", "e"]
    assert asked == ["/image/v2/images"] * 3 and client.pages_read == 3
    assert [r["id"] for r in GlanceClient(DevelopmentToken(url, "t")).images(limit=3)] == [
        "a", "b", "c"]


def test_a_listing_that_pages_forever_is_one_line(standin: Callable[[Answer], str]) -> None:
    url = standin(lambda path, query: (200, {
        "images": _records(f"x{query.get('marker', ['0'])[0]}"),
        "next": "/v2/images?marker=same"}))
    with pytest.raises(GlanceError, match=r"the listing pages forever \(its next link came "
                       r"back to marker 'same' after 2 pages\)"):
        list(GlanceClient(DevelopmentToken(url, "t")).images())


def test_an_answer_that_is_not_a_listing_is_one_line(
        standin: Callable[[Answer], str]) -> None:
    url = standin(lambda path, query: (200, {"servers": []}))
    with pytest.raises(GlanceError, match="did not answer a Glance image listing; is it "
                       "Glance v2"):
        list(GlanceClient(DevelopmentToken(url, "t")).images())
    refused = standin(lambda path, query: (403, {"error": "no"}))
    with pytest.raises(GlanceError, match=r"GET /v2/images: 403 Forbidden$"):
        list(GlanceClient(DevelopmentToken(refused, "t")).images())
