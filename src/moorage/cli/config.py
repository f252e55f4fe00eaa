"""``moorage config ...``: the configuration reference and a sample file."""

from __future__ import annotations

import argparse

from cliff.command import Command

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


COMMANDS: dict[str, type[Command]] = {
    "config reference": Reference,
    "config sample": Sample,
}
