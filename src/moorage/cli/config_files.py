"""``--config-file`` and ``--config-dir``, as every OpenStack service takes them: the
one home of both flags and of the configuration they make (``configuration``) and
hand to the server's workers (``export``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from oslo_config import cfg

from moorage.conf import load_config
from moorage.conf.environment import export_config

Overrides = Sequence[tuple[str, str, object]]


def add_config_arguments(parser: argparse.ArgumentParser, *, dirs: bool = True,
                         help: str = "INI configuration file (repeatable; later files win)"
                         ) -> None:
    """``--config-file PATH`` (repeatable) and, with ``dirs``, ``--config-dir DIR``."""
    parser.add_argument("--config-file", action="append", default=[], metavar="PATH",
                        help=help)
    if dirs:
        parser.add_argument("--config-dir", action="append", default=[], metavar="DIR",
                            help="a directory whose *.conf files are read after the "
                            "--config-file ones, in name order (repeatable), as "
                            "oslo.config's --config-dir")


def configuration(args: argparse.Namespace, overrides: Overrides = ()) -> cfg.ConfigOpts:
    """The configuration the command line names, with ``overrides`` (its flags)."""
    return load_config(args.config_file, overrides, getattr(args, "config_dir", ()))


def export(args: argparse.Namespace, overrides: Overrides) -> None:
    """Hand that configuration to the server's worker processes (the environment)."""
    export_config(args.config_file, overrides, getattr(args, "config_dir", ()))
