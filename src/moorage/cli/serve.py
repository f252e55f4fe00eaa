"""``moorage serve``: a whole cloud in one process, for trying Moorage out."""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType

from cliff.command import Command

from moorage.cli.config_files import add_config_arguments
from moorage.cli.service_logging import start_logging
from moorage.conf import check_all_options, load_config
from moorage.embedded import SAMPLE_HOSTS, EmbeddedCloud, HostPlan, parse_host
from moorage.scheduler.manager import check_configuration

PREFILTERS = (("scheduler", "image_metadata_prefilter", True),
              ("scheduler", "query_placement_for_image_type_support", True))


def guide(cloud: EmbeddedCloud) -> str:
    lines = [
        f"placement    {cloud.placement_url}   (noauth2 DEVELOPMENT auth: token 'admin')",
        f"compute API  {cloud.api_url}   (noauth2 DEVELOPMENT auth: token 'admin')",
        f"data         {cloud.workdir}",
        "hosts:",
    ]
    for plan in cloud.hosts:
        lines.append(f"  {plan.name:<12} {plan.driver:<8} {plan.description}")
    lines += [
        "",
        "In another shell:",
        f"  export MOORAGE_COMPUTE_URL={cloud.api_url} "
        f"MOORAGE_PLACEMENT_URL={cloud.placement_url}",
        "  moorage flavor create --vcpus 1 --ram 512 --disk 1 small",
        "  moorage image create --disk-format raw --property hw_vif_model=e1000 e1000",
        "  moorage server create --flavor small --image e1000 --wait vm1",
        "  moorage server show vm1",
        "",
        "Ctrl-C stops everything.",
    ]
    return "\n".join(lines)


class Serve(Command):
    """Run placement, the compute API and sample compute hosts in one process."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_config_arguments(parser, dirs=False,
                             help="INI configuration file for every service (repeatable), "
                             "e.g. with [scheduler] image_metadata_prefilter = true")
        parser.add_argument("--prefilters", action="store_true",
                            help="turn both prefilters on: [scheduler] "
                            "image_metadata_prefilter and "
                            "query_placement_for_image_type_support")
        parser.add_argument("--host", dest="hosts", action="append", default=[],
                            metavar="NAME=DRIVER[,GROUP.OPTION=VALUE...]",
                            help="a compute host to run instead of the sample ones "
                            "(repeatable), e.g. kvm1=fake,fake_driver.traits="
                            "COMPUTE_NET_VIF_MODEL_E1000+HW_ARCH_X86_64")
        parser.add_argument("--listen", default="127.0.0.1",
                            help="address of the HTTP services (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8774,
                            help="compute API port (default 8774; 0: any free port)")
        parser.add_argument("--placement-port", type=int, default=8778,
                            help="placement port (default 8778; 0: any free port)")
        parser.add_argument("--data-dir", type=Path, default=None,
                            help="keep the databases here (default: a temporary "
                            "directory removed at exit)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        try:
            hosts: list[HostPlan] = [parse_host(h) for h in parsed_args.hosts]
        except ValueError as exc:
            raise SystemExit(f"moorage serve: {exc}") from None
        overrides = list(PREFILTERS) if parsed_args.prefilters else []
        conf = load_config(parsed_args.config_file, overrides)
        try:
            # Before any service starts: one line, not a placement already "serving".
            check_all_options(conf)
            check_configuration(conf)
        except ValueError as exc:
            raise SystemExit(f"moorage serve: {exc}") from None
        start_logging(self, conf)
        with tempfile.TemporaryDirectory(prefix="moorage-") as scratch:
            workdir = parsed_args.data_dir or Path(scratch)
            cloud = EmbeddedCloud(workdir, hosts or SAMPLE_HOSTS,
                                  config_files=parsed_args.config_file,
                                  overrides=overrides, listen=parsed_args.listen,
                                  api_port=parsed_args.port,
                                  placement_port=parsed_args.placement_port)
            try:
                cloud.start()
            except OSError as exc:
                raise SystemExit(f"moorage serve: cannot start: {exc}") from None
            try:
                print(guide(cloud), flush=True)
                _wait_for_signal()
            finally:
                cloud.stop()
        return 0


def _wait_for_signal() -> None:
    stop = threading.Event()

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    while not stop.wait(1.0):
        pass
    print("stopping", file=sys.stderr)


COMMANDS: dict[str, type[Command]] = {"serve": Serve}
