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
"""

from __future__ import annotations

import logging
import os
import sys

from oslo_config import cfg
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
