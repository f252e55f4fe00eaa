"""Configuration: option definitions, one module per group, with upstream's names.

``load_config`` builds a fresh ``ConfigOpts`` (never a global) so that several
services, and the tests, can hold different configurations in one process.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from oslo_config import cfg

from moorage.conf import (
    api,
    compute,
    compute_agent,
    conductor,
    cors,
    database,
    default,
    fake_driver,
    filter_scheduler,
    ironic,
    libvirt,
    placement,
    placement_database,
    placement_server,
    scheduler,
    vmware,
)

_GROUPS = (
    default,
    api,
    compute,
    compute_agent,
    conductor,
    cors,
    database,
    fake_driver,
    filter_scheduler,
    ironic,
    libvirt,
    placement,
    placement_database,
    placement_server,
    scheduler,
    vmware,
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every option Moorage defines on ``conf``."""
    for module in _GROUPS:
        module.register_opts(conf)


def load_config(
    config_files: Sequence[str] = (),
    overrides: Iterable[tuple[str, str, object]] = (),
) -> cfg.ConfigOpts:
    """Return a new ConfigOpts read from ``config_files`` with ``overrides`` applied.

    ``overrides`` are ``(group, option, value)`` triples, for command-line flags
    that take precedence over the files.
    """
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf(
        args=[],
        project="moorage",
        default_config_files=list(config_files),
        validate_default_values=True,
    )
    for group, name, value in overrides:
        try:
            conf.set_override(name, value, group=None if group == "DEFAULT" else group)
        except ValueError as exc:
            raise ValueError(f"[{group}] {name} = {value!r}: {exc}") from None
    return conf


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Entry point for oslo-config-generator and the configuration reference."""
    return [(module.GROUP, list(module.OPTS)) for module in _GROUPS]
