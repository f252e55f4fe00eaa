"""``moorage compute run``: the compute agent of this host."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from types import FrameType
from typing import Any

from cliff.command import Command

from moorage.compute.agent import ComputeAgent
from moorage.conf import load_config
from moorage.placement.client import PlacementClient
from moorage.virt.loader import driver_name, load_driver

LOG = logging.getLogger(__name__)


class Run(Command):
    """Run the compute agent: keep this host's providers and traits in placement."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--config-file", action="append", default=[], metavar="PATH",
                            help="INI configuration file (repeatable; later files win)")
        parser.add_argument("--host", help="this host's name (default: [DEFAULT] host)")
        parser.add_argument("--driver", help="override [DEFAULT] compute_driver")
        parser.add_argument("--placement-url", metavar="URL",
                            help="override [placement] endpoint_override")
        parser.add_argument("--disabled", action="store_true",
                            help="start with the service disabled (COMPUTE_STATUS_DISABLED)")
        parser.add_argument("--once", action="store_true",
                            help="sync once, print what changed and exit (1 if it failed)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        overrides: list[tuple[str, str, object]] = []
        if parsed_args.host:
            overrides.append(("DEFAULT", "host", parsed_args.host))
        if parsed_args.driver:
            overrides.append(("DEFAULT", "compute_driver", parsed_args.driver))
        if parsed_args.placement_url:
            overrides.append(("placement", "endpoint_override", parsed_args.placement_url))
        conf = load_config(parsed_args.config_file, overrides)
        driver_name(conf.compute_driver)  # refuses an unknown driver in one line
        driver = load_driver(conf)
        placement = PlacementClient(conf.placement.endpoint_override, conf.placement.token)
        agent = ComputeAgent(conf, driver, placement, disabled=parsed_args.disabled)
        if parsed_args.once:
            result = agent.sync()
            for change in result.changes:
                self.app.stdout.write(change.summary() + "\n")
            if not result.ok:
                raise RuntimeError(result.problem)
            return 0
        stopping = threading.Event()

        def stop(signum: int, _frame: FrameType | None) -> None:
            LOG.info("signal %d: stopping the compute agent", signum)
            stopping.set()
            agent.stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        LOG.info("compute agent of %s (%s driver) syncing with placement at %s every %ds",
                 conf.host, driver.name, placement.url, conf.update_resources_interval)
        agent.run()
        return 0


COMMANDS: dict[str, type[Command]] = {"compute run": Run}
