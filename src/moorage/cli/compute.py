"""``moorage compute traits``: what a compute driver would report for this host, or
for a domain capabilities file with no hypervisor at all."""

from __future__ import annotations

import argparse

from cliff.columns import FormattableColumn
from cliff.lister import Lister

from moorage.cli.config_files import add_config_arguments, configuration
from moorage.cli.output import Table
from moorage.virt.driver import ComputeDriver
from moorage.virt.loader import load_driver


class SupportedColumn(FormattableColumn[bool]):
    """yes/no in tables, true/false in JSON and YAML."""

    def human_readable(self) -> str:
        return "yes" if self._value else "no"


class Traits(Lister):
    """List every trait the compute driver owns on this host: supported (added to the
    host's provider) or not (removed), where it learned it, and from what."""

    COLUMNS = ("trait", "supported", "source", "detail")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_config_arguments(parser)
        parser.add_argument("--node", metavar="NAME",
                            help="the node to list, for drivers with several (ironic)")
        files = parser.add_argument_group(
            "domain capabilities files", "the libvirt driver's traits for these documents "
            "(virsh domcapabilities), with no hypervisor")
        files.add_argument("--domcaps", action="append", default=[], metavar="FILE",
                           help="a domain capabilities document; repeat for other guest "
                           "architectures")
        files.add_argument("--virt-type", metavar="TYPE",
                           help="[libvirt] virt_type to judge them for: kvm, qemu, lxc or "
                           "parallels (required with --domcaps)")
        files.add_argument("--arch", metavar="ARCH",
                           help="the host's CPU architecture (default: the first file's)")
        files.add_argument("--machine", metavar="MACHINE",
                           help="the name the file's machine type goes by in details, as "
                           "[libvirt] hw_machine_type would give it (q35 for pc-q35-7.2)")
        files.add_argument("--devices", action="append", default=[], metavar="ARCH=FILE",
                           help="the device list of ARCH's emulator (qemu-system-ARCH "
                           "-device help > FILE), which NIC, sound and vIOMMU models come "
                           "from; repeat for other architectures")
        files.add_argument("--cpu", action="append", default=[], metavar="ARCH=FILE",
                           help="the host-model CPU of ARCH as libvirt expands it (virsh "
                           "hypervisor-cpu-baseline --features), which CPU feature traits "
                           "come from")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        driver = _driver(parsed_args)
        reports = driver.trait_reports(_node(driver, parsed_args.node))
        for note in driver.notes():
            self.app.stderr.write(f"note: {note}\n")
        return self.COLUMNS, [
            (r.trait, SupportedColumn(r.supported), str(r.source), r.detail) for r in reports
        ]


def _driver(args: argparse.Namespace) -> ComputeDriver:
    """The configured driver, connected; or the libvirt driver over ``--domcaps`` files."""
    overrides: list[tuple[str, str, object]] = []
    if args.virt_type:
        overrides.append(("libvirt", "virt_type", args.virt_type))
    conf = configuration(args, overrides)
    if not args.domcaps:
        if args.arch or args.machine or args.devices or args.cpu:
            raise ValueError("--arch, --machine, --devices and --cpu describe --domcaps "
                             "files; give one")
        driver = load_driver(conf)
        driver.init_host()
        return driver
    if not args.virt_type:
        raise ValueError("--domcaps needs --virt-type (kvm, qemu, lxc or parallels)")
    from moorage.virt.libvirt import discovery
    from moorage.virt.libvirt.driver import LibvirtDriver

    facts = discovery.facts_from_files(args.domcaps, conf.libvirt.virt_type,
                                       host_arch=args.arch, machine_name=args.machine,
                                       devices=_arch_files("--devices", args.devices),
                                       cpu=_arch_files("--cpu", args.cpu))
    return LibvirtDriver(conf, facts)


def _arch_files(option: str, entries: list[str]) -> dict[str, str]:
    """``--devices x86_64=FILE`` entries as arch -> file."""
    found = {}
    for entry in entries:
        arch, sep, path = entry.partition("=")
        if not sep or not arch.strip() or not path.strip():
            raise ValueError(f"{option} {entry!r}: give ARCH=FILE (x86_64=FILE)")
        found[arch.strip()] = path.strip()
    return found


def _node(driver: ComputeDriver, chosen: str | None) -> str:
    nodes = driver.nodes()
    if chosen is not None:
        if chosen not in nodes:
            raise ValueError(f"the {driver.name} driver has no node {chosen!r} "
                             f"(it has: {', '.join(nodes) or 'none'})")
        return chosen
    if len(nodes) != 1:
        raise ValueError(f"the {driver.name} driver manages {len(nodes)} nodes "
                         f"({', '.join(nodes)}): choose one with --node")
    return nodes[0]


COMMANDS: dict[str, type[Lister]] = {
    "compute traits": Traits,
}
