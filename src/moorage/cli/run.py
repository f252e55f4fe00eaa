"""``moorage run [CLOUD.yaml]``: what the prefilters change, on a described cloud."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from cliff.command import Command

import moorage
from moorage.cli.twin import add_capture_arguments, capture_cloud
from moorage.run.results import Machine, RunResult, WorkloadBoot


class ProgressBar:
    """One line on a terminal, redrawn; a line per configuration otherwise."""

    def __init__(self, stream: TextIO, configurations: int) -> None:
        self.stream = stream
        self.configurations = configurations
        self.tty = stream.isatty()
        self.current: str | None = None
        self.number = 0
        self.started = time.monotonic()

    def __call__(self, configuration: str, done: int, total: int) -> None:
        if configuration != self.current:
            if self.current is not None and self.tty:
                self.stream.write("\n")
            self.current = configuration
            self.number += 1
            self.started = time.monotonic()
            if not self.tty:
                self.stream.write(f"[{self.number}/{self.configurations}] {configuration}: "
                                  f"{total} boots\n")
                self.stream.flush()
        elapsed = time.monotonic() - self.started
        rate = f"{done / elapsed:6.1f} boots/s" if elapsed > 0 and done else ""
        if self.tty:
            width = 30
            filled = width * done // max(total, 1)
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(f"\r[{self.number}/{self.configurations}] {configuration:<30.30} "
                              f"[{bar}] {done}/{total} boots {elapsed:5.1f}s {rate}")
            self.stream.flush()
        elif done == total and total:
            self.stream.write(f"[{self.number}/{self.configurations}] {configuration}: "
                              f"{total} boots in {elapsed:.1f}s ({rate.strip()})\n")
            self.stream.flush()

    def finish(self) -> None:
        if self.tty and self.current is not None:
            self.stream.write("\n")
            self.stream.flush()


def registration_progress(stream: TextIO) -> Callable[[int, int], None]:
    """Progress of the hosts' registration with placement: a line redrawn on a
    terminal, the end only otherwise."""
    started = time.monotonic()

    def report(done: int, total: int) -> None:
        step = max(1, total // 50)
        if stream.isatty() and (done % step == 0 or done == total):
            stream.write(f"\rregistering {total:,} simulated hosts with placement: "
                         f"{done:,}/{total:,} ")
            stream.flush()
        if done == total:
            stream.write(("\r" if stream.isatty() else "") + f"{total:,} simulated hosts "
                         f"registered in {time.monotonic() - started:.1f}s\n")
            stream.flush()

    return report


def machine() -> Machine:
    return Machine(platform=platform.platform(), python=platform.python_version(),
                   cpus=os.cpu_count(), moorage=moorage.__version__)


class Run(Command):
    """Play a cloud's workload with the prefilters off, each on, both on, and with the
    legacy ImagePropertiesFilter, and report the difference."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("cloud", nargs="?", type=Path, default=None,
                            help="cloud description (YAML; default: the bundled small "
                            "example, see docs/cloud-file.md)")
        parser.add_argument("--example", choices=["small", "large"], default=None,
                            help="a bundled cloud: small (17 hosts, 48 boots, the default) "
                            "or large (2,000 simulated hosts, 10,000 boots)")
        parser.add_argument("--from-cloud", metavar="NAME", default=None,
                            help="play the twin of a real cloud of clouds.yaml (read "
                            "only): write it as NAME-twin.yaml here (`moorage cloud "
                            "capture`), then play it")
        add_capture_arguments(parser)
        parser.add_argument("--concurrency", type=int, default=None, metavar="N",
                            help="servers booted at a time (default: the cloud file's "
                            "workload.concurrency, 1 if it has none); above 1 the order in "
                            "which boots reach the scheduler is not fixed")
        parser.add_argument("--api-workers", type=int, default=None, metavar="N",
                            help="run each configuration's compute API as `moorage api "
                            "serve --workers N`, reaching the hosts over HTTP (default: "
                            "in this process for a cloud of up to 100 hosts, 2 "
                            "processes for a larger one; 0: in this process)")
        parser.add_argument("--html", type=Path, metavar="FILE",
                            help="also write a self-contained HTML report with charts")
        parser.add_argument("--json", type=Path, metavar="FILE",
                            help="also write the results as JSON, one entry per "
                            "configuration")
        parser.add_argument("--seed", type=int, default=None,
                            help="override the cloud file's seed")
        parser.add_argument("--only", action="append", default=[], metavar="NAME",
                            help="play only this configuration (repeatable): "
                            "'prefilters off', 'image type', 'image metadata', 'both', "
                            "'legacy ImagePropertiesFilter'")
        parser.add_argument("--recorded-libvirt", action="store_true",
                            help="run libvirt hosts from recorded domain capabilities "
                            "even where libvirt and QEMU are installed")
        parser.add_argument("--verbose-services", action="store_true",
                            help="let the services log every request (to stderr)")
        parser.add_argument("--work-dir", type=Path, default=None,
                            help="keep the services' databases here (default: a "
                            "temporary directory)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        from moorage.compute.fleet import FLEET_DRIVERS
        from moorage.run import description, report
        from moorage.run.fleet_hosts import fleet_hosts
        from moorage.run.host_plans import host_plans
        from moorage.run.player import CONFIGURATIONS, PlayError, play_on, stage_of

        # Every request of every service would be logged otherwise; the report says it all.
        if not parsed_args.verbose_services:
            logging.getLogger("moorage").setLevel(logging.WARNING)
            # libvirt's own messages (a root guest is "tainted", dmidecode without
            # /dev/mem, ...) go to a file instead of over the progress bar.
            libvirt_log = Path(tempfile.gettempdir()) / f"moorage-run-libvirt-{os.getpid()}.log"
            os.environ.setdefault("LIBVIRT_LOG_OUTPUTS", f"3:file:{libvirt_log}")

        given = [name for name, value in (("a cloud file", parsed_args.cloud),
                                          ("--example", parsed_args.example),
                                          ("--from-cloud", parsed_args.from_cloud))
                 if value is not None]
        if len(given) > 1:
            raise SystemExit(f"moorage run: give one of a cloud file, --example and "
                             f"--from-cloud, not {' and '.join(given)}")
        if parsed_args.from_cloud is not None:
            parsed_args.cloud = Path(f"{parsed_args.from_cloud}-twin.yaml")
            options = argparse.Namespace(**{**vars(self.app.options),
                                            "os_cloud": parsed_args.from_cloud})
            try:
                capture_cloud(options, parsed_args, parsed_args.cloud, sys.stderr)
            except ValueError as exc:
                raise SystemExit(f"moorage run: {exc}") from None
        if parsed_args.api_workers is not None and not 0 <= parsed_args.api_workers <= 64:
            raise SystemExit(f"moorage run: --api-workers {parsed_args.api_workers}: "
                             "allowed: 0 to 64")
        if parsed_args.concurrency is not None and not 1 <= parsed_args.concurrency <= 256:
            raise SystemExit(f"moorage run: --concurrency {parsed_args.concurrency}: "
                             "allowed: 1 to 256")
        path = parsed_args.cloud or description.EXAMPLES[parsed_args.example or "small"]
        try:
            cloud = description.load_cloud(path)
        except description.CloudError as exc:
            raise SystemExit(f"moorage run: {exc}") from None
        except OSError as exc:
            raise SystemExit(f"moorage run: cannot read {path}: {exc.strerror}") from None
        if parsed_args.seed is not None:
            cloud = description.with_seed(cloud, parsed_args.seed)
        known = {c.name: c for c in CONFIGURATIONS}
        unknown = [name for name in parsed_args.only if name not in known]
        if unknown:
            raise SystemExit(f"moorage run: unknown configuration {unknown[0]!r}; "
                             f"allowed: {', '.join(repr(n) for n in known)}")
        configurations = ([known[n] for n in parsed_args.only] if parsed_args.only
                          else list(CONFIGURATIONS))
        notes: list[str] = []
        real_libvirt = False
        if any(g.driver == "libvirt" for g in cloud.host_groups):
            from moorage.run.libvirt_hosts import libvirt_available
            available, why = libvirt_available()
            real_libvirt = available and not parsed_args.recorded_libvirt
            notes.append(
                f"libvirt hosts ran on real QEMU through libvirt (libvirt's log: "
                f"{os.environ.get('LIBVIRT_LOG_OUTPUTS', 'stderr')})" if real_libvirt else
                "libvirt hosts ran from recorded domain capabilities (a simulation: late "
                "checks and domain XML are real, no QEMU guest starts): "
                + ("--recorded-libvirt given" if parsed_args.recorded_libvirt else why))
        concurrency = parsed_args.concurrency or cloud.workload.concurrency
        if concurrency > 1:
            notes.append(f"servers were booted {concurrency} at a time: the order in which "
                         "they reached the scheduler is not fixed, so another run of the "
                         "same seed may place some differently (use --concurrency 1 for "
                         "a run that repeats exactly)")
        with tempfile.TemporaryDirectory(prefix="moorage-run-") as scratch:
            workdir = parsed_args.work_dir or Path(scratch)
            workdir.mkdir(parents=True, exist_ok=True)
            simulated = [g for g in cloud.host_groups if g.driver in FLEET_DRIVERS]
            plans = host_plans(
                dataclasses.replace(cloud, host_groups=tuple(
                    g for g in cloud.host_groups if g.driver not in FLEET_DRIVERS)),
                real_libvirt, workdir=workdir)
            boots = [(b.image, b.flavor) for b in description.boots(cloud)]
            flavors = [description.flavor_json(f) for f in cloud.flavors]
            images = [description.image_json(i) for i in cloud.images]
            hosts = [{"name": name, "group": group.name, "driver": group.driver,
                      "real": False, "description": group.description
                      or f"{group.driver} host of group {group.name}"}
                     for group in simulated for name in group.host_names()]
            hosts += [{"name": plan.name, "group": group.name, "driver": plan.driver,
                       "real": real_libvirt and group.driver == "libvirt",
                       "description": plan.description} for group, plan in plans]
            run = RunResult(
                cloud_name=cloud.name, cloud_file=str(path), seed=cloud.seed, hosts=hosts,
                workload=[WorkloadBoot(index=i, image=image, flavor=flavor)
                          for i, (image, flavor) in enumerate(boots)],
                machine=machine(), notes=notes)
            api_workers = parsed_args.api_workers
            if api_workers is None:
                api_workers = 0 if len(hosts) <= 100 else 2
            stage = stage_of([plan for _, plan in plans], workdir,
                             fleet_hosts(cloud.name, simulated), api_workers=api_workers)
            progress = ProgressBar(sys.stderr, len(configurations))
            try:
                stage.start(registration_progress(sys.stderr))
                for configuration in configurations:
                    run.configurations.append(play_on(
                        stage, configuration, flavors, images, boots, progress=progress,
                        concurrency=concurrency))
            except PlayError as exc:
                progress.finish()
                raise SystemExit(f"moorage run: {exc}") from None
            finally:
                stage.stop()
            progress.finish()
        print(report.terminal_table(run), end="")
        if parsed_args.json:
            report.write_json(run, parsed_args.json)
            print(f"JSON: {parsed_args.json}")
        if parsed_args.html:
            report.write_html(run, parsed_args.html)
            print(f"HTML report: {parsed_args.html}")
        return 0


COMMANDS: dict[str, type[Command]] = {"run": Run}
