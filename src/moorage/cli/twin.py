"""``moorage cloud capture``: a twin of a real cloud, written as a cloud file that
``moorage run`` plays (and ``moorage run --from-cloud NAME``, which captures and
plays). The cloud is read read-only (moorage.run.cloud_reader) through Keystone's
catalog, as ``--os-cloud``/``OS_*`` say, and turned into host groups, images, flavors
and today's workload mix (moorage.run.capture)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

import yaml
from cliff.command import Command

from moorage import service_auth
from moorage.cli import cloud
from moorage.run.capture import DEFAULT_MAX_HOSTS, Capture, capture
from moorage.run.cloud_reader import MAX_IMAGES, CloudReadError, read_cloud


def add_capture_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the twin of a real cloud")
    group.add_argument("--boots", type=int, default=None, metavar="N",
                       help="boots in the twin's workload, shared as today's servers "
                       "share flavors and images (default: as many as servers today)")
    group.add_argument("--max-hosts", type=int, default=DEFAULT_MAX_HOSTS, metavar="N",
                       help="simulate at most about N hosts: a larger cloud is sampled, "
                       f"each group at the same share (default {DEFAULT_MAX_HOSTS})")
    group.add_argument("--max-images", type=int, default=MAX_IMAGES, metavar="N",
                       help=f"read at most N images (default {MAX_IMAGES})")


def capture_cloud(options: argparse.Namespace, parsed_args: argparse.Namespace,
                  output: Path, stderr: TextIO) -> Capture:
    """Read the cloud the options name, write its twin to ``output``, and say what was
    left out on ``stderr``. ValueError (one line) when it cannot."""
    for flag in ("boots", "max_hosts", "max_images"):
        value = getattr(parsed_args, flag)
        if value is not None and value < 1:
            raise ValueError(f"--{flag.replace('_', '-')} {value}: allowed: 1 or more")
    if not cloud.chosen(options):
        raise ValueError("name the cloud to capture: --os-cloud NAME (clouds.yaml), or "
                         "the OS_* variables")
    region = cloud.load_cloud(options)
    token: service_auth.KeystoneToken | None = None

    def credentials(service_type: str) -> service_auth.Credentials:
        nonlocal token  # one token for the three services
        found = cloud.cloud_credentials(region, service_type, token=token)
        token = found.token
        return found

    def progress(line: str) -> None:
        stderr.write(f"{line}\n")
        stderr.flush()

    name = region.name if region.name != "envvars" else "cloud"
    try:
        observed = read_cloud(name, credentials, progress=progress,
                              max_images=parsed_args.max_images)
    except CloudReadError as exc:
        raise ValueError(str(exc)) from None
    twin = capture(observed, boots=parsed_args.boots, max_hosts=parsed_args.max_hosts)
    header = [f"A twin of the cloud {name}, written by `moorage cloud capture` (read "
              "only). Edit it (add a host group, retire old images) and replay it with "
              "`moorage run FILE`; the format is docs/cloud-file.md.", *twin.notes]
    header += [f"image skipped: {image}: {why}" for image, why in twin.skipped_images]
    header += [f"flavor skipped: {flavor}: {why}" for flavor, why in twin.skipped_flavors]
    text = "".join(f"# {line}\n" for line in header)
    text += yaml.safe_dump(twin.cloud, sort_keys=False, allow_unicode=True, width=88)
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"--output {output}: cannot write it: {exc.strerror}") from None
    for group, count, first in twin.groups:
        stderr.write(f"group {group}: {count} host(s) alike ({', '.join(first)}"
                     f"{', ...' if count > len(first) else ''})\n")
    for line in header[1:]:
        stderr.write(f"{line}\n")
    stderr.write(f"wrote {output}\n")
    return twin


class CloudCapture(Command):
    """Write the twin of a real cloud (--os-cloud, OS_*) as a cloud file for `moorage
    run`: its hosts grouped by what they report, its images, flavors and today's
    workload. Read only."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--output", "-o", type=Path, required=True, metavar="FILE",
                            help="the cloud file to write (YAML)")
        add_capture_arguments(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        capture_cloud(self.app.options, parsed_args, parsed_args.output,
                      getattr(self.app, "stderr", sys.stderr))
        return 0


COMMANDS: dict[str, type[Command]] = {"cloud capture": CloudCapture}
