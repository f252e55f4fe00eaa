"""[DEFAULT] logging: oslo.log's own options (debug, log_file, log_dir,
log_config_append, use_stderr, logging_context_format_string, default_log_levels...),
registered by oslo.log itself so that they mean what they mean in every OpenStack
service, and listed here so that the reference and the sample file show them."""

from __future__ import annotations

from oslo_config import cfg
from oslo_log import _options
from oslo_log import log as oslo_log

GROUP = "DEFAULT"

# What ``oslo_log.log.register_options`` registers, in its order (its ``list_opts``
# adds fatal_deprecations, which only oslo.log's versionutils reads: not ours).
OPTS: tuple[cfg.Opt, ...] = (*_options.common_cli_opts, *_options.logging_cli_opts,
                             *_options.generic_log_opts, *_options.log_opts)


def register_opts(conf: cfg.ConfigOpts) -> None:
    oslo_log.register_options(conf)
