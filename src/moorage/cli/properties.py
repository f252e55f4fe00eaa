"""``flavor|image|aggregate set`` and ``unset``: one thing, named by name or id, and the
``--property`` items (extra specs, image properties, aggregate metadata) to set or
remove. The commands differ only in what they call; the arguments, the parsing of
``--property`` and the refusal of an empty change are written once, here."""

from __future__ import annotations

import abc
import argparse
from collections.abc import Mapping
from typing import ClassVar

from cliff.command import Command

from moorage.api.client import ComputeApiClient
from moorage.cli.api_options import add_api_arguments, api_client, key_values, keys


class _OneThing(Command):
    """A command on one ``noun`` (flavor, image, aggregate), named by name or id."""

    noun: ClassVar[str]

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument(self.noun, help=f"{self.noun} name or id")
        self.add_arguments(parser)
        return parser

    @abc.abstractmethod
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The command's own arguments, after the thing's name."""


class SetProperties(_OneThing):
    """Set attributes (``changes``) and ``--property KEY=VALUE`` items on one thing."""

    # What to give when nothing is given, as the refusal names it.
    options: ClassVar[str] = "--property KEY=VALUE"

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        properties = key_values(parsed_args.property)
        changes = self.changes(parsed_args)
        if not changes and not properties:
            raise ValueError(f"nothing to set: give {self.options}")
        self.apply(api_client(parsed_args, self.app.options), getattr(parsed_args, self.noun),
                   changes, properties)
        return 0

    def changes(self, parsed_args: argparse.Namespace) -> dict[str, object]:
        """The attributes given (none but ``--property`` unless a command has more)."""
        return {}

    @abc.abstractmethod
    def apply(self, client: ComputeApiClient, ref: str, changes: Mapping[str, object],
              properties: Mapping[str, str]) -> None:
        """Make the change to the thing ``ref`` names."""


class UnsetProperties(_OneThing):
    """Remove ``--property KEY`` items from one thing."""

    # What one --property names: "an extra spec", "a property", "a metadata item".
    item: ClassVar[str]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--property", metavar="KEY", action="append", default=[],
                            help=f"{self.item} to remove (repeatable)")

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        names = keys(parsed_args.property)
        if not names:
            raise ValueError("nothing to unset: give --property KEY")
        self.unset(api_client(parsed_args, self.app.options), getattr(parsed_args, self.noun),
                   names)
        return 0

    @abc.abstractmethod
    def unset(self, client: ComputeApiClient, ref: str, names: list[str]) -> None:
        """Remove ``names`` from the thing ``ref`` names."""
