"""Configuration: option definitions, one module per group, with upstream's names.

``load_config`` builds a fresh ``ConfigOpts`` (never a global) so that several
services, and the tests, can hold different configurations in one process.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import threading
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
    keystoneauth,
    libvirt,
    log,
    oslo_middleware,
    placement,
    placement_database,
    placement_server,
    quota,
    scheduler,
    vmware,
)

# The group name of the options outside any group, as messages and overrides name it.
DEFAULT_GROUP = "DEFAULT"

# The groups holding keystoneauth1's options (conf.keystoneauth), and the options that
# choose a plugin.
_KEYSTONEAUTH_GROUPS = (glance.GROUP, placement.GROUP)
_PLUGIN_CHOICE = frozenset({"auth_type", "auth_section"})

# Held while load_config has the process's stderr swapped for its own buffer.
_STDERR_SWAP = threading.Lock()

# [DEFAULT] and [log] first, then the groups by name: the order of the reference.
_GROUPS = (default, log, api, compute, compute_agent, conductor, cors, database, fake_driver,
           filter_scheduler, glance, image, image_cache, ironic, libvirt, oslo_middleware,
           placement, placement_database, placement_server, quota, scheduler, vmware)


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every option Moorage defines on ``conf``."""
    for module in _GROUPS:
        module.register_opts(conf)


def load_config(
    config_files: Sequence[str] = (),
    overrides: Iterable[tuple[str, str, object]] = (),
    config_dirs: Sequence[str] = (),
) -> cfg.ConfigOpts:
    """Return a new ConfigOpts read from ``config_files``, then every ``*.conf`` of each
    of ``config_dirs`` in name order (oslo.config's ``--config-dir``: later files
    win), with ``overrides`` applied.

    ``overrides`` are ``(group, option, value)`` triples, for command-line flags
    that take precedence over the files.
    """
    for directory in config_dirs:
        if not os.path.isdir(directory):
            raise ValueError(f"--config-dir {directory}: no such directory")
    conf = cfg.ConfigOpts()
    register_opts(conf)
    refused = io.StringIO()
    try:
        # oslo.config hands the files' values of command-line options ([DEFAULT]
        # debug...) to argparse, which prints its complaint and exits: caught here.
        # stderr is the process's: one load at a time swaps it, and what other threads
        # wrote meanwhile is written on afterwards.
        with _STDERR_SWAP, contextlib.redirect_stderr(refused):
            conf(
                args=[],
                project="moorage",
                default_config_files=list(config_files),
                default_config_dirs=list(config_dirs),
                validate_default_values=True,
            )
        if refused.getvalue():
            sys.stderr.write(refused.getvalue())
    except SystemExit:
        # "argument --debug: Invalid Boolean value: maybe"
        complaint = " ".join(refused.getvalue().split()) or "a value is not valid"
        option, _, reason = complaint.removeprefix("argument --").partition(": ")
        name = option.replace("-", "_")
        raise InvalidOption(f"[{DEFAULT_GROUP}] {name}: {reason}{_allowed(DEFAULT_GROUP, name)}"
                            if reason else f"[{DEFAULT_GROUP}] {complaint}") from None
    except cfg.Error as exc:
        raise unreadable(exc) from None
    # auth_type first: the options of the plugin it names exist only once it is known.
    given = list(overrides)
    _override(conf, [o for o in given if o[1] in _PLUGIN_CHOICE])
    _register_plugin_options(conf)
    _override(conf, [o for o in given if o[1] not in _PLUGIN_CHOICE])
    return conf


def _override(conf: cfg.ConfigOpts, overrides: Iterable[tuple[str, str, object]]) -> None:
    for group, name, value in overrides:
        try:
            conf.set_override(name, value, group=None if group == DEFAULT_GROUP else group)
        except ValueError as exc:
            raise ValueError(f"[{group}] {name} = {value!r}: {exc}") from None


def _register_plugin_options(conf: cfg.ConfigOpts) -> None:
    for group in _KEYSTONEAUTH_GROUPS:
        keystoneauth.register_plugin_options(conf, group)


def unreadable(exc: cfg.Error) -> Exception:
    """oslo.config's failure to read the configuration's files, in one line: a
    ValueError naming the file (or directory) and what is wrong; ``exc`` itself when
    it is another error."""
    if isinstance(exc, cfg.ConfigFilesNotFoundError):
        return ValueError(f"configuration file not found: {', '.join(exc.config_files)}")
    if isinstance(exc, cfg.ConfigFileParseError):
        return ValueError(f"configuration file {exc.config_file}: not an INI file: "
                          f"{' '.join(str(exc.msg).split())}")
    if isinstance(exc, cfg.ConfigDirNotFoundError):
        return ValueError(f"--config-dir {exc.config_dir}: no such directory")
    return exc


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
        return conf[name] if group == DEFAULT_GROUP else conf[group][name]
    except (cfg.ConfigSourceValueError, cfg.ConfigFileValueError) as exc:
        match = _FILE_VALUE.search(str(exc))
        where, reason = (f" in {match['file']}", match["reason"]) if match else ("", str(exc))
        raise InvalidOption(f"[{group}] {name}{where}: {' '.join(reason.split())}"
                            f"{_allowed(group, name)}") from None


def where(conf: cfg.ConfigOpts, group: str, name: str) -> str:
    """`` in FILE`` when the option's value came from a configuration file, for a
    refusal to name the file to fix; "" otherwise (a default, an override)."""
    try:
        location = conf.get_location(name, None if group == DEFAULT_GROUP else group)
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return ""
    return f" in {location.detail}" if location is not None and location.detail else ""


def _allowed(group: str, name: str) -> str:
    """``; allowed: ...`` for a boolean or a number (oslo.config's message does not
    say what would do)."""
    for found_group, opts in list_opts():
        if found_group == group:
            for opt in opts:
                if opt.dest == name:
                    return _allowed_values(opt)
    return ""


def _allowed_values(opt: cfg.Opt) -> str:
    if isinstance(opt, cfg.BoolOpt):
        return "; allowed: true or false (also yes/no, on/off, 1/0)"
    kind = {cfg.IntOpt: "an integer", cfg.FloatOpt: "a number"}.get(type(opt))
    if kind is None:
        return ""
    low, high = getattr(opt.type, "min", None), getattr(opt.type, "max", None)
    bounds = (f" from {low} to {high}" if low is not None and high is not None
              else f" of at least {low}" if low is not None
              else f" of at most {high}" if high is not None else "")
    return f"; allowed: {kind}{bounds}"


def check_options(conf: cfg.ConfigOpts, groups: Iterable[str]) -> None:
    """Read every option of ``groups`` now, so that a service refuses a bad value when
    it starts (InvalidOption), not at the first request that reads it."""
    for group in groups:
        for name in sorted(conf[group]):
            option_value(conf, group, name)


def check_all_options(conf: cfg.ConfigOpts) -> None:
    """Read every option registered on ``conf`` now, [DEFAULT]'s and every group's
    (Moorage's and the libraries' a service registered: oslo.log's, keystonemiddleware's,
    oslo.middleware's), so that a service refuses a bad value before it listens:
    InvalidOption, one line naming the option, the file and what is allowed."""
    groups = []
    for name in sorted(conf):
        try:
            if isinstance(conf[name], cfg.ConfigOpts.GroupAttr):
                groups.append(name)
        except (cfg.ConfigSourceValueError, cfg.ConfigFileValueError):
            option_value(conf, DEFAULT_GROUP, name)  # raises InvalidOption
    check_options(conf, groups)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Entry point for oslo-config-generator and the configuration reference: one entry
    per group ([DEFAULT] gathers ours and oslo.log's)."""
    merged: dict[str, list[cfg.Opt]] = {}
    for module in _GROUPS:
        merged.setdefault(module.GROUP, []).extend(
            [*module.OPTS, *getattr(module, "LISTED_OPTS", ())])
    return list(merged.items())
