"""Request ids: which caller ids are taken, what a call to another service sends, and
what each log line is given (``moorage.request_context``); the transport's header,
against a real HTTP server."""

from __future__ import annotations

import http.server
import logging
import threading
from collections.abc import Iterator

import pytest

from moorage import request_context, transport
from moorage.request_context import ContextFilter, active, new_context, outgoing_id

CALLER = "req-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


@pytest.mark.parametrize(("value", "taken"), [
    (CALLER, True),
    ("req-0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", False),  # upstream's ids are lower case
    ("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", False),      # no req- prefix
    ("req-0f1e2d3c4b5a697887 96a5b4c3d2e1f0", False),
    (CALLER + "\n", False),
    (CALLER + " injected", False),
    ("req-not-a-uuid", False),
    ("", False),
])
def test_only_a_well_formed_caller_id_becomes_the_global_id(value: str, taken: bool) -> None:
    environ = {"HTTP_X_OPENSTACK_REQUEST_ID": value}
    assert request_context.global_id_of(environ) == (value if taken else None)


def test_outgoing_calls_send_the_global_id_else_the_local_one() -> None:
    assert outgoing_id() is None
    with active(new_context(global_request_id=CALLER)) as context:
        assert context.request_id != CALLER
        assert outgoing_id() == CALLER
        with active(new_context()) as inner:
            assert outgoing_id() == inner.request_id
        assert outgoing_id() == CALLER
    assert outgoing_id() is None


def _record(message: str, **kwargs: object) -> logging.LogRecord:
    record = logging.getLogger("test").makeRecord("test", logging.INFO, __file__, 1, message,
                                                  (), None, extra=kwargs or None)
    ContextFilter().filter(record)
    return record


def test_each_line_gets_the_context_of_its_request_and_none_outside() -> None:
    assert _record("between requests").context is None
    given = new_context()
    with active(new_context(global_request_id=CALLER)) as context:
        request_context.identify("alice", "project-a")
        assert _record("during").context is context
        assert (context.user_id, context.project_id) == ("alice", "project-a")
        # A record made with its own context (oslo.log's adapters) keeps it.
        assert _record("explicit", context=given).context is given
    assert _record("after").context is None


class _Echo(http.server.BaseHTTPRequestHandler):
    seen: list[str | None] = []

    def do_GET(self) -> None:
        _Echo.seen.append(self.headers.get(request_context.HEADER))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def echo() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Echo.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_transport_passes_the_id_on(echo: str) -> None:
    server = transport.Server(echo, timeout=5)
    server.request("GET", "/")  # outside any request: no header
    with active(new_context(global_request_id=CALLER)):
        server.request("GET", "/")
    with active(new_context()) as local:
        server.request("GET", "/")
        # A caller that names an id itself keeps it.
        server.request("GET", "/", headers={request_context.HEADER: CALLER})
    server.close()
    assert _Echo.seen == [None, CALLER, local.request_id, CALLER]


@pytest.mark.parametrize(("sent", "logged"), [
    ("/servers/abc", "/servers/abc"),
    ("/servers/\nINFO forged", "/servers/\\nINFO forged"),
    ("/a\r\x1b[31m\x7f", "/a\\r\\x1b[31m\\x7f"),
    ("/a\x85b\u2028c\u2029", "/a\\x85b\\u2028c\\u2029"),
    ("/café/🙂\tx", "/café/🙂\\tx"),  # letters beyond ASCII are not controls
])
def test_control_characters_are_written_as_escapes(sent: str, logged: str) -> None:
    assert request_context.printable(sent) == logged
    assert request_context.printable(logged) == logged  # escaping twice changes nothing


def test_a_records_arguments_are_escaped_its_numbers_kept() -> None:
    record = logging.getLogger("test").makeRecord(
        "test", logging.INFO, __file__, 1, "%s %d %r", ("a\nb", 3, ValueError("x\ny")),
        None)
    ContextFilter().filter(record)
    assert record.getMessage() == "a\\nb 3 'x\\\\ny'"
    assert "\n" not in record.getMessage()
    named = logging.getLogger("test").makeRecord(
        "test", logging.INFO, __file__, 1, "%(path)s", ({"path": "/x\x1b"},), None)
    ContextFilter().filter(named)
    assert named.getMessage() == "/x\\x1b"


def test_the_request_line_logs_the_path_escaped(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.requests")
    with caplog.at_level(logging.INFO, logger="test.requests"):
        request_context.log_request(logger, {
            "REQUEST_METHOD": "GET", "PATH_INFO": "/servers/\nforged", "REMOTE_ADDR": "::1",
            "QUERY_STRING": "name=%0A"}, 404, 10, 0.001)
    [line] = caplog.messages
    assert '"GET /servers/\\nforged?name=%0A" status: 404' in line
