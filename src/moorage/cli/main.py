"""``moorage``: one command for operators and users, in the openstack CLI's style
(cliff: ``-f table|json|yaml|value``, ``-c COLUMN``).

Each command's module is imported only when that command runs: importing every
module (the compute API, the run player, libvirt's...) took 0.95 s before any
command started, and every service start (``moorage placement serve``, ``moorage api
serve``) paid it. ``COMMAND_MODULES`` names the module of each command; a test holds
it equal to the modules' own ``COMMANDS`` tables.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Any

from cliff.app import App
from cliff.command import Command
from cliff.commandmanager import CommandManager

import moorage
from moorage.cli.cloud import add_cloud_arguments
from moorage.supervision import die_with_parent

# alembic says "setup plugin ..." at INFO when first imported, which now happens after
# cliff has set up the console: not news to an operator.
logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)

# The module (under moorage.cli) that defines each command, in its COMMANDS table.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "placement": ("placement candidates", "placement db sync", "placement demo",
                  "placement provider list", "placement provider show",
                  "placement provider tree", "placement serve"),
    "config": ("config reference", "config sample", "config systemd"),
    "compute_agent": ("compute run",),
    "compute": ("compute traits",),
    "fleet": ("compute fleet",),
    "flavor": ("flavor create", "flavor delete", "flavor list", "flavor set", "flavor show",
               "flavor unset"),
    "image": ("image create", "image delete", "image list", "image set", "image show",
              "image unset"),
    "server": ("server create", "server delete", "server evacuate", "server list",
               "server migrate", "server migration list", "server rebuild",
               "server resize", "server resize confirm", "server resize revert",
               "server show"),
    "host": ("host list", "host set"),
    "capabilities": ("capabilities",),
    "aggregate": ("aggregate add host", "aggregate create", "aggregate delete",
                  "aggregate list", "aggregate remove host", "aggregate set",
                  "aggregate show", "aggregate unset"),
    "api": ("api db sync", "api serve", "conductor serve"),
    "serve": ("serve",),
    "run": ("run",),
    "scheduler": ("scheduler preflight",),
    "twin": ("cloud capture",),
}


class LazyCommand:
    """An entry-point-like object for cliff: imports its module when loaded."""

    def __init__(self, name: str, module: str) -> None:
        self.name = name
        self.module = module

    @property
    def value(self) -> str:
        return f"moorage.cli.{self.module}:COMMANDS[{self.name!r}]"

    def load(self) -> type[Command]:
        commands: dict[str, type[Command]] = importlib.import_module(
            f"moorage.cli.{self.module}").COMMANDS
        return commands[self.name]


class MoorageApp(App):
    # Why a command failed, in one line; a logger of its own, so that a service's log
    # setup can send it to the console when the log goes to a file (moorage.logs).
    LOG = logging.getLogger("moorage.cli.main")

    def __init__(self) -> None:
        manager = CommandManager("moorage.cli")
        for module, names in COMMAND_MODULES.items():
            for name in names:
                manager.commands[name] = LazyCommand(name, module)  # type: ignore[assignment]
        super().__init__(
            description="Moorage: places instances on the hosts that can really run them.",
            version=moorage.__version__,
            command_manager=manager,
            deferred_help=True,
        )

    def build_option_parser(self, description: str | None, version: str | None,
                            argparse_kwargs: dict[str, Any] | None = None
                            ) -> argparse.ArgumentParser:
        """cliff's global options, and those of every OpenStack CLI (--os-cloud...)."""
        parser: argparse.ArgumentParser = super().build_option_parser(
            description, version, argparse_kwargs)
        add_cloud_arguments(parser)
        return parser

    def configure_logging(self) -> None:
        super().configure_logging()
        # keystoneauth1's warnings (a version discovery that fell back to the URL) are
        # for -v; what failed is the command's own one line.
        if self.options.verbose_level < 2:
            logging.getLogger("keystoneauth").setLevel(logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    # A service a test run or `moorage run` started ends with it (supervision).
    die_with_parent()
    return int(MoorageApp().run(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
