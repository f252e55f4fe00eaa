"""Options a configuration file sets that nothing reads: a typo
(``image_metadata_prefiltr``), an option of another release, a nova.conf's own. oslo.config
ignores them without a word; a service says so once, at start, naming the file and
the section.

Only the sections the service reads are checked ([DEFAULT] and every group registered
on its configuration, Moorage's and the libraries'): a nova.conf's [neutron] is not
Moorage's to judge. An option is known by its name, its deprecated names and its
command-line spelling (``log-file``).
"""

from __future__ import annotations

import configparser
import glob
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from oslo_config import cfg

from moorage.conf import DEFAULT_GROUP


@dataclass(frozen=True)
class UnknownOptions:
    """The options of one section of one file that nothing reads."""

    file: str
    section: str
    names: tuple[str, ...]

    def message(self) -> str:
        return (f"{self.file} [{self.section}]: {', '.join(self.names)}: "
                f"{'no such option' if len(self.names) == 1 else 'no such options'} "
                "here; ignored (misspelt, or another service's?)")


def _normal(name: str) -> str:
    return name.replace("-", "_").lower()


def known_names(conf: cfg.ConfigOpts) -> dict[str, set[str]]:
    """Section -> the option names it may hold, for every section ``conf`` reads.
    (oslo.config lists registered options only through its private tables, stable
    since its first releases: ``_opts`` for [DEFAULT], ``_groups`` for the rest.)"""
    tables: dict[str, Mapping[str, Mapping[str, object]]] = {
        DEFAULT_GROUP: getattr(conf, "_opts", {})}
    for name, group in getattr(conf, "_groups", {}).items():
        tables[name] = getattr(group, "_opts", {})
    known: dict[str, set[str]] = {section: set() for section in tables}
    for section, options in tables.items():
        for info in options.values():
            opt = info.get("opt")
            if not isinstance(opt, cfg.Opt):
                continue
            known[section].update({_normal(opt.name), _normal(opt.dest)})
            for old in opt.deprecated_opts:
                known.setdefault(old.group or section, set()).add(
                    _normal(old.name or opt.dest))
    return known


def files_of(conf: cfg.ConfigOpts) -> list[str]:
    """The files ``conf`` was read from, in the order read: its files, then each
    directory's ``*.conf`` in name order."""
    found = list(getattr(conf, "config_file", None) or [])
    for directory in getattr(conf, "config_dir", None) or []:
        found.extend(sorted(glob.glob(os.path.join(directory, "*.conf"))))
    return found


def unknown_options(conf: cfg.ConfigOpts) -> list[UnknownOptions]:
    """What the files ``conf`` was read from set in the sections it reads that none of
    its options is."""
    known = known_names(conf)
    found: list[UnknownOptions] = []
    for path in files_of(conf):
        parser = configparser.ConfigParser(strict=False, interpolation=None,
                                           default_section="\x00none")
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue  # oslo.config read it, or refused it, with its own message
        for section in parser.sections():
            names = known.get(section)
            if names is None:
                continue
            unknown = sorted(name for name in parser[section] if _normal(name) not in names)
            if unknown:
                found.append(UnknownOptions(path, section, tuple(unknown)))
    return found


def warn(conf: cfg.ConfigOpts, logger: logging.Logger) -> None:
    """One warning per file and section that sets options nothing reads."""
    for found in unknown_options(conf):
        logger.warning("%s", found.message())
