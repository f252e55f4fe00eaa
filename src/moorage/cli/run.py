"""``moorage run [CLOUD.yaml]``: what the prefilters change, on a described cloud."""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from cliff.command import Command

import moorage
from moorage.run.results import RunResult


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
        if self.tty:
            width = 30
            filled = width * done // max(total, 1)
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(f"\r[{self.number}/{self.configurations}] {configuration:<30.30} "
                              f"[{bar}] {done}/{total} boots "
                              f"{time.monotonic() - self.started:5.1f}s")
            self.stream.flush()

    def finish(self) -> None:
        if self.tty and self.current is not None:
            self.stream.write("\n")
            self.stream.flush()


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "python": platform.python_version(),
            "cpus": os.cpu_count(), "moorage": moorage.__version__}


class Run(Command):
    """Play a cloud's workload with the prefilters off, each on, both on, and with the
    legacy ImagePropertiesFilter, and report the difference."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("cloud", nargs="?", type=Path, default=None,
                            help="cloud description (YAML; default: the bundled example, "
                            "see docs/cloud-file.md)")
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

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        from moorage.run import description, report
        from moorage.run.player import CONFIGURATIONS, PlayError, play

        # Every request of every service would be logged otherwise; the report says it all.
        if not parsed_args.verbose_services:
            logging.getLogger("moorage").setLevel(logging.WARNING)
            # libvirt's own messages (a root guest is "tainted", dmidecode without
            # /dev/mem, ...) go to a file instead of over the progress bar.
            libvirt_log = Path(tempfile.gettempdir()) / f"moorage-run-libvirt-{os.getpid()}.log"
            os.environ.setdefault("LIBVIRT_LOG_OUTPUTS", f"3:file:{libvirt_log}")

        path = parsed_args.cloud or description.BUNDLED_EXAMPLE
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
        with tempfile.TemporaryDirectory(prefix="moorage-run-") as scratch:
            workdir = parsed_args.work_dir or Path(scratch)
            workdir.mkdir(parents=True, exist_ok=True)
            plans = description.host_plans(cloud, real_libvirt, workdir=workdir)
            boots = [(b.image, b.flavor) for b in description.boots(cloud)]
            flavors = [description.flavor_json(f) for f in cloud.flavors]
            images = [description.image_json(i) for i in cloud.images]
            run = RunResult(
                cloud_name=cloud.name, cloud_file=str(path), seed=cloud.seed,
                hosts=[{"name": plan.name, "group": group.name, "driver": plan.driver,
                        "real": real_libvirt and group.driver == "libvirt",
                        "description": plan.description} for group, plan in plans],
                workload=[{"index": i, "image": image, "flavor": flavor}
                          for i, (image, flavor) in enumerate(boots)],
                machine=machine(), notes=notes)
            progress = ProgressBar(sys.stderr, len(configurations))
            try:
                for configuration in configurations:
                    run.configurations.append(play(
                        configuration, [plan for _, plan in plans], flavors, images,
                        boots, workdir, progress=progress))
            except PlayError as exc:
                progress.finish()
                raise SystemExit(f"moorage run: {exc}") from None
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
