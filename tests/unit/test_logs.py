"""The lean formatter writes, for every record, the line oslo.log's ContextFormatter
writes: compared line for line over the formats operators set and the records a
service logs (in a request and outside one, DEBUG with its suffix, with an exception,
naming an instance), and it is the formatter a service's handlers get."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import pytest
from oslo_config import cfg
from oslo_log import formatters
from oslo_log import log as oslo_log

from moorage import logs, request_context

FORMATS: list[dict[str, str]] = [
    {},
    {"logging_context_format_string":
     "%(isotime)s %(levelname)s [%(request_id)s %(user_identity)s] %(instance)s"
     "%(message)s %(error_summary)s %(color)s%(project)s/%(version)s"},
    {"logging_user_identity_format": "%(user)s:%(project)s:%(domain)s",
     "logging_debug_format_suffix": "from %(funcName)s",
     "logging_default_format_string": "%(asctime)s - %(isotime)s %(message)s"},
    # Context values read from the context one by one, and ones that are not plain
    # attributes (a masked token, a list): those lines take oslo.context's dictionary.
    {"logging_context_format_string":
     "%(asctime)s [%(request_id)s %(user_name)s@%(project_domain_name)s %(is_admin)s "
     "%(resource_uuid)s %(project_id)s] %(message)s"},
    {"logging_context_format_string":
     "%(asctime)s [%(request_id)s %(roles)s %(auth_token)s] %(message)s"},
]


@pytest.fixture(params=range(len(FORMATS)),
                ids=["defaults", "isotime", "identity", "plain", "dictionary"])
def conf(request: pytest.FixtureRequest) -> Iterator[cfg.ConfigOpts]:
    conf = cfg.ConfigOpts()
    oslo_log.register_options(conf)
    conf([], project="moorage")
    for name, value in FORMATS[request.param].items():
        conf.set_override(name, value)
    yield conf


def _context(user: str | None, project: str | None, **extra: object
             ) -> request_context.RequestContext:
    context = request_context.new_context(
        global_request_id="req-2ea78e6a-95b6-4b4a-88a2-378610b9e865")
    context.user_id, context.project_id = user, project
    for name, value in extra.items():
        setattr(context, name, value)
    return context


def _records() -> Iterator[logging.LogRecord]:
    """Records as the services make them, through the handlers' ContextFilter."""
    contexts = [None, _context(None, None), _context("admin", "p1"),
                _context("u", "p", resource_uuid="6a1f0c2e-5b3d-4e7f-9a80-1b2c3d4e5f60"),
                _context("u2", "p2", user_name="alice", project_domain_name="Default",
                         is_admin=True, roles=["member", "reader"], auth_token="secret")]
    levels = [logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR]
    for context in contexts:
        for level in levels:
            for message, args in (('%s "%s %s" status: %d time: %.1fms',
                                   ("127.0.0.1", "GET", "/a%20b?x=1", 200, 7.25)),
                                  ("100%% done", ()), ("no args %(a)s", ())):
                record = logging.LogRecord("moorage.placement.requests", level, __file__,
                                           42, message, args, None, func="serve")
                with request_context.active(context) if context else _nothing():
                    request_context.ContextFilter().filter(record)
                yield record
    try:
        raise ValueError("the disk is full\nsecond line")
    except ValueError:
        failed = logging.LogRecord("moorage.x", logging.ERROR, __file__, 1, "failed",
                                   (), sys.exc_info())
        request_context.ContextFilter().filter(failed)
        yield failed
        active = logging.LogRecord("moorage.x", logging.WARNING, __file__, 1, "while",
                                   (), None)
        request_context.ContextFilter().filter(active)
        yield active
    named = logging.LogRecord("moorage.x", logging.INFO, __file__, 1, "spawned", (), None)
    named.instance = {"uuid": "6a1f0c2e-5b3d-4e7f-9a80-1b2c3d4e5f60"}
    request_context.ContextFilter().filter(named)
    yield named
    bad = logging.LogRecord("moorage.x", logging.INFO, __file__, 1, "%d", ("x",), None)
    request_context.ContextFilter().filter(bad)
    yield bad


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_exc: object) -> None:
        return None


def _copy(record: logging.LogRecord) -> logging.LogRecord:
    return logging.makeLogRecord(dict(record.__dict__))


def _line(formatter: logging.Formatter, record: logging.LogRecord) -> str:
    """The line, or what the formatter raised (to the handler's handleError)."""
    try:
        return formatter.format(_copy(record))
    except TypeError as exc:
        return f"raised {exc}"


@pytest.mark.parametrize("datefmt", [None, "%Y-%m-%d %H:%M:%S", "%d/%b %H:%M"])
def test_every_line_is_the_line_oslo_log_writes(conf: cfg.ConfigOpts,
                                                 datefmt: str | None) -> None:
    upstream = formatters.ContextFormatter(project="moorage", version="1.2.3",
                                           datefmt=datefmt, config=conf)
    lean = logs.LeanContextFormatter(project="moorage", version="1.2.3", datefmt=datefmt,
                                     config=conf)
    compared = 0
    for record in _records():
        for _ in range(2):  # a format's style is cached: the second line as the first
            assert _line(lean, record) == _line(upstream, record), record.__dict__
            compared += 1
    assert compared == 2 * (5 * 4 * 3 + 4)


def test_the_time_of_a_line_is_its_own_second() -> None:
    conf = cfg.ConfigOpts()
    oslo_log.register_options(conf)
    conf([], project="moorage")
    lean = logs.LeanContextFormatter(project="moorage", version="1", config=conf,
                                     datefmt="%H:%M:%S")
    record = logging.LogRecord("moorage.x", logging.INFO, __file__, 1, "m", (), None)
    times = []
    for created in (3600.2, 3600.9, 3601.0, 3600.5):
        record.created = created
        times.append(lean.formatTime(record, "%H:%M:%S"))
    assert times[0] == times[1] == times[3] != times[2]
    assert times[2].endswith(":01")


def test_the_context_values_a_line_reads() -> None:
    # The defaults name plain attributes only: read one by one.
    plain = logs._plain_values(["%(request_id)s %(user_identity)s %(global_request_id)s",
                                "%(user)s %(project)s %(domain)s %(system_scope)s "
                                "%(user_domain)s %(project_domain)s"])
    assert plain is not None
    assert dict(plain) == {"request_id": "request_id", "global_request_id":
                           "global_request_id", "user": "user_id", "project": "project_id",
                           "domain": "domain_id", "system_scope": "system_scope",
                           "user_domain": "user_domain_id",
                           "project_domain": "project_domain_id"}
    # A masked token or a list: oslo.context's dictionary.
    assert logs._plain_values(["%(auth_token)s"]) is None
    assert logs._plain_values(["%(roles)s"]) is None


def test_a_services_handlers_get_the_lean_formatter(tmp_path: object) -> None:
    conf = cfg.ConfigOpts()
    oslo_log.register_options(conf)
    conf([], project="moorage")
    conf.set_override("log_file", f"{tmp_path}/service.log")
    root = logging.getLogger()
    saved = list(root.handlers), root.level
    try:
        logs.setup(conf)
        file_handlers = [h for h in root.handlers if isinstance(h, logging.FileHandler)]
        assert file_handlers and all(
            type(h.formatter) is logs.LeanContextFormatter for h in file_handlers)
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
