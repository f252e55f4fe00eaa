"""The services' logging: oslo.log, configured from ``[DEFAULT]`` as in any OpenStack
service (``debug``, ``log_file``, ``log_dir``, ``log_config_append``, ``use_stderr``,
``logging_context_format_string``, ``default_log_levels``...), with the request's
context on every line it causes (``moorage.request_context``).

Every service command calls ``setup`` once its configuration is read, and each
worker process of a server calls ``setup_worker`` from its application factory, so
that the workers log as the process that launched them. Client commands (``flavor
list``...) never call it: they keep cliff's console logging (-v, -q, --debug).

Where Moorage differs from oslo.log's defaults, and why:

* With neither ``log_file`` nor ``use_stderr`` (nor the journal), oslo.log writes to
  stdout; Moorage's services print what they serve there (the URL, the guide of
  ``moorage serve``), so their log goes to stderr instead, as it did before oslo.log.
* ``moorage -q`` keeps a service to warnings and errors (``moorage run`` quiets its
  services so): the workers learn it from the environment (``QUIET_ENV``).
* A command that fails after logging is set up still says why in one line on
  stderr when the log itself goes elsewhere (``log_file`` alone).
* oslo.log's ``ContextFormatter`` writes the lines, through ``LeanContextFormatter``:
  the same line, at a third of the CPU, for the lines a service writes most (one
  per request served). Why: at 140 µs a line it was an eighth of placement's CPU
  per boot (issue 27's profile). It reads only the context values the formats
  name, not oslo.context's whole dictionary, and formats the time once a second:
  84 to 65 µs for a request's line (stop 45's ``log_request`` loop).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable

from oslo_config import cfg
from oslo_log import formatters as oslo_formatters
from oslo_log import log as oslo_log

import moorage
from moorage import request_context
from moorage.jsonvalue import JSONValue

PRODUCT = "moorage"
QUIET_ENV = "MOORAGE_LOG_QUIET"

# granian's own messages (a worker started, a worker's unexpected exit) go to the
# service's log, in its format, rather than to stdout in granian's.
GRANIAN_LOGGING: dict[str, JSONValue] = {
    "loggers": {"_granian": {"handlers": [], "propagate": True}},
}


def setup(conf: cfg.ConfigOpts, *, quiet: bool = False,
          failures: logging.Logger | None = None) -> None:
    """Log as ``conf`` says, through oslo.log; RuntimeError in one line when it cannot
    (a ``log_config_append`` that is missing or not a logging configuration, a
    ``log_file`` that cannot be opened), the logging left as it was.

    ``quiet``: warnings and errors only. ``failures``: the logger that reports why a
    command failed, given a line on stderr when the log does not reach it."""
    os.environ[QUIET_ENV] = "1" if quiet else ""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        _check_log_config(conf.log_config_append)
        oslo_log.setup(conf, PRODUCT, moorage.__version__, fix_eventlet=False)
    except (RuntimeError, oslo_log.LogConfigError, OSError) as exc:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
        raise RuntimeError(_problem(conf, exc)) from None
    if not conf.log_config_append:
        _stdout_to_stderr(root)
        _lean_formatters(root, conf)
    if quiet:
        root.setLevel(logging.WARNING)
    request_context.filter_handlers(root)
    if failures is not None and not _reaches_console(root):
        _console_failures(failures)


def setup_worker(conf: cfg.ConfigOpts) -> None:
    """``setup`` in a server's worker process, as its launching process did."""
    setup(conf, quiet=os.environ.get(QUIET_ENV) == "1")


def _check_log_config(path: str | None) -> None:
    """A missing or unreadable logging configuration, named before oslo.log resets the
    loggers to read it."""
    if path is None:
        return
    if not os.path.isfile(path):
        raise RuntimeError(f"[DEFAULT] log_config_append {path}: no such file")
    if not os.access(path, os.R_OK):
        raise RuntimeError(f"[DEFAULT] log_config_append {path}: not readable")


def _problem(conf: cfg.ConfigOpts, exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) and str(exc).startswith("[DEFAULT]"):
        return str(exc)
    if isinstance(exc, oslo_log.LogConfigError):
        reason = " ".join(exc.err_msg.split()) or type(exc).__name__
        return f"[DEFAULT] log_config_append {exc.log_config}: not a logging " \
               f"configuration: {reason}"
    if isinstance(exc, OSError) and exc.filename:
        return f"cannot open the log file {exc.filename}: {exc.strerror}"
    return f"cannot set up logging: {' '.join(str(exc).split())}"


def _stdout_to_stderr(root: logging.Logger) -> None:
    for handler in root.handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout:
            handler.setStream(sys.stderr)


def _reaches_console(root: logging.Logger) -> bool:
    return any(isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
               and h.stream in (sys.stderr, sys.stdout) for h in root.handlers)


class _FailureLine(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr, the message alone: what cliff's console showed of a failed command."""


def _console_failures(logger: logging.Logger) -> None:
    if any(isinstance(h, _FailureLine) for h in logger.handlers):
        return
    handler = _FailureLine(sys.stderr)
    handler.setLevel(logging.ERROR)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)


# The context attributes oslo.log turns into the line's instance part.
_INSTANCE_ATTRIBUTES = ("instance", "instance_uuid", "resource_uuid")

# oslo.context's logging values (``get_logging_values``) that are a context attribute
# as it is, by the name a format uses: a line whose formats name only these reads
# them from the context, not from the whole dictionary oslo.context builds (checked
# against oslo.context's own values when the formatter is made).
_PLAIN_VALUES: dict[str, str] = {
    "user": "user_id", "project_id": "project_id", "project": "project_id",
    "system_scope": "system_scope", "domain": "domain_id", "user_domain": "user_domain_id",
    "project_domain": "project_domain_id", "request_id": "request_id",
    "global_request_id": "global_request_id", "resource_uuid": "resource_uuid",
    "user_name": "user_name", "project_name": "project_name", "domain_name": "domain_name",
    "user_domain_name": "user_domain_name", "project_domain_name": "project_domain_name",
    "is_admin": "is_admin", "read_only": "read_only", "show_deleted": "show_deleted",
    "is_admin_project": "is_admin_project"}
_NAMED = re.compile(r"%\((\w+)\)")


def _plain_values(formats: Iterable[str]) -> tuple[tuple[str, str], ...] | None:
    """(logging value, context attribute) of each context value ``formats`` name,
    when every one is plain (``_PLAIN_VALUES``) and oslo.context agrees; None when one
    is not (``auth_token`` is masked, ``roles`` a list): such lines take oslo.context's
    whole dictionary."""
    sample = request_context.RequestContext()
    for attribute in set(_PLAIN_VALUES.values()):
        setattr(sample, attribute, f"v-{attribute}")  # each its own value
    values = sample.get_logging_values()
    named = {name for text in formats for name in _NAMED.findall(text)}
    wanted = sorted((named & values.keys()) - {"user_identity"})
    if any(name not in _PLAIN_VALUES
           or values[name] != getattr(sample, _PLAIN_VALUES[name]) for name in wanted):
        return None
    return tuple((name, _PLAIN_VALUES[name]) for name in wanted)


class LeanContextFormatter(oslo_formatters.ContextFormatter):
    """oslo.log's ContextFormatter, its line unchanged, made cheaper for the lines
    below WARNING that carry no exception and name no instance (a request served, a
    step of the work): of the context, only the values the formats name are read
    (``_plain_values``); the formats are read from the configuration once, not at
    every line; the time is formatted once a second (with a ``log_date_format``);
    the ISO time is made only for a format that shows it. Every other record is
    oslo.log's to format."""

    def __init__(self, *, project: str, version: str, datefmt: str | None,
                 config: cfg.ConfigOpts) -> None:
        super().__init__(project=project, version=version, datefmt=datefmt,
                         config=config)
        self._context_format = str(config.logging_context_format_string)
        self._default_format = str(config.logging_default_format_string)
        self._identity_format = str(config.logging_user_identity_format)
        self._identity_names = tuple(_NAMED.findall(self._identity_format))
        self._debug_suffix = config.logging_debug_format_suffix
        self._plain = _plain_values([self._context_format, self._default_format,
                                     self._identity_format, self._debug_suffix or ""])
        self._styles: dict[str, logging.PercentStyle] = {}
        self._second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord,
                   datefmt: str | None = None) -> str:
        """logging's, remembered for the second it is in: with a ``datefmt`` the text
        changes once a second (without one it shows milliseconds)."""
        if not datefmt:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if self._second[0] != second:
            self._second = (second, super().formatTime(record, datefmt))
        return self._second[1]

    def format(self, record: logging.LogRecord) -> str:
        fields = record.__dict__
        context = fields.get("context", None)
        if (record.levelno >= logging.WARNING or record.exc_info
                or "context" not in fields
                or fields.get("instance") or fields.get("instance_uuid")
                or (context is not None and (
                    not isinstance(context, request_context.RequestContext)
                    or any(getattr(context, name, None)
                           for name in _INSTANCE_ATTRIBUTES)))):
            return super().format(record)
        fields["project"] = self.project
        fields["version"] = self.version
        fields["instance"] = ""
        for key in ("color", "user_identity", "resource", "user_name", "project_name",
                    "global_request_id"):
            fields.setdefault(key, "")
        request_id = fields.get("request_id")
        if context is not None:
            if self._plain is not None and type(context) is request_context.RequestContext:
                values = {name: getattr(context, attribute) for name, attribute in self._plain}
                request_id = context.request_id
            else:
                values = context.get_logging_values()
                request_id = values.get("request_id")
            fields.update(values)
            fields["user_identity"] = self._identity_format % {
                name: values.get(name) or "-" for name in self._identity_names}
        fmt = self._context_format if request_id else self._default_format
        fields["error_summary"] = "-" if "%(error_summary)s" in fmt else ""
        if record.levelno == logging.DEBUG and self._debug_suffix:
            fmt = f"{fmt} {self._debug_suffix}"
        if "isotime" in fmt:
            self._compute_iso_time(record)
        style = self._styles.get(fmt)
        if style is None:
            style = self._styles[fmt] = logging.PercentStyle(fmt)
        self._style, self._fmt = style, style._fmt
        try:
            return logging.Formatter.format(self, record)
        except TypeError:
            return super().format(record)


def _lean_formatters(root: logging.Logger, conf: cfg.ConfigOpts) -> None:
    """oslo.log's ContextFormatter on ``root``'s handlers replaced by the lean one."""
    for handler in root.handlers:
        formatter = handler.formatter
        if type(formatter) is oslo_formatters.ContextFormatter:
            handler.setFormatter(LeanContextFormatter(
                project=formatter.project, version=formatter.version,
                datefmt=formatter.datefmt, config=conf))
