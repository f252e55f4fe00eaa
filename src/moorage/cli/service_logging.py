"""The logging of a service command (``placement serve``, ``api serve``, ``conductor
serve``, ``compute run``, ``compute fleet``, ``serve``): oslo.log from its
configuration (``moorage.logs``), with the command's -q, in place of cliff's console."""

from __future__ import annotations

import logging

from cliff.command import Command
from oslo_config import cfg

from moorage import logs
from moorage.conf import unknown

LOG = logging.getLogger(__name__)


def start_logging(command: Command, conf: cfg.ConfigOpts) -> None:
    """Log as ``conf`` says from now on; ``moorage -q``: warnings and errors only. With
    ``[DEFAULT] debug``, every option's value is logged first (secrets masked), as
    OpenStack services do at start."""
    options = command.app_args
    quiet = options is not None and getattr(options, "verbose_level", 1) == 0
    logs.setup(conf, quiet=quiet, failures=command.app.LOG)
    unknown.warn(conf, LOG)  # a misspelt option, said once, where the operator reads
    if LOG.isEnabledFor(logging.DEBUG):
        try:
            conf.log_opt_values(LOG, logging.DEBUG)
        except (cfg.Error, ValueError):
            LOG.debug("some options have invalid values; the service names them")
