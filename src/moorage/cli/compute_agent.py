"""``moorage compute run``: the compute agent of this host, its HTTP API and heartbeat.

The agent runs in one granian worker (``compute/agent_wsgi.py``), served as every
other service is; this process is granian's master. ``--once`` syncs from this
process and exits.
"""

from __future__ import annotations

import argparse
import logging
import os

from cliff.command import Command

from moorage import service_auth, supervision
from moorage.cli.config_files import add_config_arguments, configuration, export
from moorage.cli.listen import claim_port
from moorage.cli.service_logging import start_logging
from moorage.compute.agent import ComputeAgent
from moorage.compute.agent_wsgi import DISABLED_ENV
from moorage.conf import check_all_options
from moorage.conf.placement import DEVELOPMENT_URL as PLACEMENT_URL
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import free_port
from moorage.virt.loader import driver_name, load_driver

LOG = logging.getLogger(__name__)


class Run(Command):
    """Run the compute agent: keep this host's providers and traits in placement, serve
    its HTTP API (spawn, destroy, disable) and heart-beat to the compute API."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_config_arguments(parser)
        parser.add_argument("--host", help="this host's name (default: [DEFAULT] host)")
        parser.add_argument("--driver", help="override [DEFAULT] compute_driver")
        parser.add_argument("--placement-url", metavar="URL",
                            help="override [placement] endpoint_override")
        parser.add_argument("--listen", metavar="ADDRESS",
                            help="address of the agent's HTTP API (default: "
                            "[compute_agent] listen, 127.0.0.1)")
        parser.add_argument("--port", type=int,
                            help="TCP port of the agent's HTTP API (default: "
                            "[compute_agent] port, 8781; 0 for any free port)")
        parser.add_argument("--api-url", metavar="URL",
                            help="the compute API to register with (overrides "
                            "[compute_agent] api_url)")
        parser.add_argument("--disabled", action="store_true", default=None,
                            help="start with the service disabled (COMPUTE_STATUS_DISABLED); "
                            "by default the compute API's record decides (without one: "
                            "enabled; with --once: left as placement has it)")
        parser.add_argument("--once", action="store_true",
                            help="sync once, print what changed and exit (1 if it failed)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        overrides: list[tuple[str, str, object]] = []
        if parsed_args.host:
            overrides.append(("DEFAULT", "host", parsed_args.host))
        if parsed_args.driver:
            overrides.append(("DEFAULT", "compute_driver", parsed_args.driver))
        if parsed_args.placement_url:
            overrides.append(("placement", "endpoint_override", parsed_args.placement_url))
        if parsed_args.listen:
            overrides.append(("compute_agent", "listen", parsed_args.listen))
        if parsed_args.port is not None:
            overrides.append(("compute_agent", "port", parsed_args.port))
        if parsed_args.api_url:
            overrides.append(("compute_agent", "api_url", parsed_args.api_url))
        conf = configuration(parsed_args, overrides)
        check_all_options(conf)  # a bad value is one line now, not a failure later
        if not parsed_args.once:  # a service; --once is a command that prints
            start_logging(self, conf)
        driver_name(conf.compute_driver)  # refuses an unknown driver in one line
        driver = load_driver(conf)
        placement = PlacementClient.from_conf(conf)
        placement_at = service_auth.destination(conf, "placement",
                                                development_url=PLACEMENT_URL)
        if parsed_args.once:
            agent = ComputeAgent(conf, driver, placement, disabled=parsed_args.disabled)
            result = agent.sync()
            for change in result.changes:
                self.app.stdout.write(change.summary() + "\n")
            if not result.ok:
                raise RuntimeError(result.problem)
            return 0

        opts = conf.compute_agent
        if not opts.port:  # any free port: chosen here, so the URL is known
            overrides.append(("compute_agent", "port", free_port(opts.listen)))
            conf = configuration(parsed_args, overrides)
            opts = conf.compute_agent
        host = f"[{opts.listen}]" if ":" in opts.listen else opts.listen
        url = opts.advertise_url or f"http://{host}:{opts.port}"
        with claim_port(opts.listen, opts.port):
            self.app.stdout.write(
                f"compute agent of {conf.host} ({driver.name} driver): serving {url}, "
                f"syncing with placement at {placement_at} every "
                f"{conf.update_resources_interval}s, registering with "
                f"{opts.api_url or 'no compute API'}\n")
            self.app.stdout.flush()
            export(parsed_args, overrides)
            os.environ[DISABLED_ENV] = "1" if parsed_args.disabled else ""
            # One worker: the agent (its driver's guests, its hypervisor connection)
            # lives in it. Its threads answer the conductors' spawns, which can take
            # minutes on a real hypervisor. READY=1 once its providers are in
            # placement and its API answers.
            supervision.serve("moorage.compute.agent_wsgi:create_app", host=opts.listen,
                              port=opts.port, workers=1, threads=32,
                              stop_timeout=conf.graceful_shutdown_timeout)
        return 0


COMMANDS: dict[str, type[Command]] = {"compute run": Run}
