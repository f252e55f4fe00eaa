"""Configuration: option definitions, one module per group, with upstream's names.

``load_config`` builds a fresh ``ConfigOpts`` (never a global) so that several
services, and the tests, can hold different configurations in one process.
"""

from __future__ import annotations

import re
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
    glance,
    image,
    image_cache,
    ironic,
    libvirt,
    log,
    placement,
    placement_database,
    placement_server,
    quota,
    scheduler,
    vmware,
)

# [DEFAULT] and [log] first, then the groups by name: the order of the reference.
_GROUPS = (default, log, api, compute, compute_agent, conductor, cors, database, fake_driver,
           filter_scheduler, glance, image, image_cache, ironic, libvirt, placement,
           placement_database, placement_server, quota, scheduler, vmware)


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


class InvalidOption(ValueError):
    """An option whose value cannot be used, in one line: the option, the file it came
    from, and the values it allows."""


_FILE_VALUE = re.compile(r"from LocationInfo\(.*detail='(?P<file>[^']*)'\) is not valid: "
                         r"(?P<reason>.*)", re.DOTALL)


def option_value(conf: cfg.ConfigOpts, group: str, name: str) -> object:
    """An option's value; a configuration file's invalid value (a boolean that is not
    one, a choice outside the choices) is InvalidOption naming the option, the file and
    what is allowed."""
    try:
        return conf[group][name]
    except (cfg.ConfigSourceValueError, cfg.ConfigFileValueError) as exc:
        match = _FILE_VALUE.search(str(exc))
        where, reason = (f" in {match['file']}", match["reason"]) if match else ("", str(exc))
        raise InvalidOption(f"[{group}] {name}{where}: {' '.join(reason.split())}"
                            f"{_allowed(group, name)}") from None


def _allowed(group: str, name: str) -> str:
    """``; allowed: true or false`` for a boolean (oslo.config's message does not say)."""
    for found_group, opts in list_opts():
        if found_group == group:
            for opt in opts:
                if opt.dest == name and isinstance(opt, cfg.BoolOpt):
                    return "; allowed: true or false (also yes/no, on/off, 1/0)"
    return ""


def check_options(conf: cfg.ConfigOpts, groups: Iterable[str]) -> None:
    """Read every option of ``groups`` now, so that a service refuses a bad value when
    it starts (InvalidOption), not at the first request that reads it."""
    for group in groups:
        for name in sorted(conf[group]):
            option_value(conf, group, name)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Entry point for oslo-config-generator and the configuration reference: one entry
    per group ([DEFAULT] gathers ours and oslo.log's)."""
    merged: dict[str, list[cfg.Opt]] = {}
    for module in _GROUPS:
        merged.setdefault(module.GROUP, []).extend(module.OPTS)
    return list(merged.items())
