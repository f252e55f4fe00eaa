"""``moorage config ...``: the configuration reference, a sample file, and the systemd
units of this install."""

from __future__ import annotations

import argparse
from pathlib import Path

from cliff.command import Command

from moorage import systemd
from moorage.conf import reference


class Reference(Command):
    """Print the configuration reference (Markdown), generated from the option definitions."""

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        self.app.stdout.write(reference.render_markdown())
        return 0


class Sample(Command):
    """Print a sample configuration file with every option and its default."""

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        self.app.stdout.write(reference.render_sample())
        return 0


class Systemd(Command):
    """Write a systemd unit per service, starting this install's moorage (the script
    beside its Python: a virtual environment's or /usr/local/bin's)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--output-dir", metavar="DIR", required=True,
                            help="where to write the units (/etc/systemd/system)")
        parser.add_argument("--config-file", action="append", default=[], metavar="PATH",
                            help="the configuration file the services read (repeatable; "
                            f"default {systemd.UNIT_CONFIG_FILE})")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        directory = Path(parsed_args.output_dir)
        if not directory.is_dir():
            raise ValueError(f"--output-dir {directory}: no such directory")
        command = systemd.installed_command()
        written = systemd.units(command, parsed_args.config_file or [systemd.UNIT_CONFIG_FILE])
        for name, text in written.items():
            (directory / name).write_text(text)
        self.app.stdout.write(f"wrote {', '.join(written)} to {directory}, starting "
                              f"{command}\n")
        return 0


COMMANDS: dict[str, type[Command]] = {
    "config reference": Reference,
    "config sample": Sample,
    "config systemd": Systemd,
}
