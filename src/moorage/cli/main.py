"""``moorage``: one command for operators and users, in the openstack CLI's style
(cliff: ``-f table|json|yaml|value``, ``-c COLUMN``)."""

from __future__ import annotations

import sys

from cliff.app import App
from cliff.commandmanager import CommandManager

import moorage
from moorage.cli import (
    aggregate,
    api,
    compute,
    compute_agent,
    config,
    flavor,
    fleet,
    host,
    image,
    placement,
    run,
    serve,
    server,
)


class MoorageApp(App):
    def __init__(self) -> None:
        manager = CommandManager("moorage.cli")
        for name, command in {**placement.COMMANDS, **config.COMMANDS,
                              **compute_agent.COMMANDS, **compute.COMMANDS, **fleet.COMMANDS,
                              **flavor.COMMANDS, **image.COMMANDS, **server.COMMANDS,
                              **host.COMMANDS, **aggregate.COMMANDS,
                              **api.COMMANDS, **serve.COMMANDS,
                              **run.COMMANDS}.items():
            manager.add_command(name, command)
        super().__init__(
            description="Moorage: places instances on the hosts that can really run them.",
            version=moorage.__version__,
            command_manager=manager,
            deferred_help=True,
        )


def main(argv: list[str] | None = None) -> int:
    return int(MoorageApp().run(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
