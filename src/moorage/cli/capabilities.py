"""``moorage capabilities``: what the cloud offers, as a user sees it (GET
/v2.1/capabilities): each standard trait offered by at least the cloud's host floor,
its family, how many hosts and their free capacity; with ``--image-properties``, each
image property value and the trait it requires."""

from __future__ import annotations

import argparse

from cliff.lister import Lister

from moorage.api.client import Capabilities
from moorage.cli.api_options import add_api_arguments, api_client
from moorage.cli.output import Table

TRAIT_COLUMNS = ("family", "trait", "label", "hosts", "free_vcpus", "free_memory_mb",
                 "free_disk_gb")
PROPERTY_COLUMNS = ("property", "value", "requires", "availability", "hosts", "checked_by")


def trait_rows(capabilities: Capabilities, family: str | None) -> list[list[object]]:
    return [[f["title"], t["trait"], t["label"], t["hosts"], t["free"].get("VCPU"),
             t["free"].get("MEMORY_MB"), t["free"].get("DISK_GB")]
            for f in capabilities["families"] if family in (None, f["family"])
            for t in f["traits"]]


def property_rows(capabilities: Capabilities, name: str | None) -> list[list[object]]:
    return [[p["property"], v["value"], v["trait"], v["availability"], v["hosts"],
             p["checked_by"]]
            for p in capabilities["image_properties"] if name in (None, p["property"])
            for v in p["values"]]


class CapabilitiesList(Lister):
    """List the capabilities the cloud offers (standard traits; no host is named)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("--family", metavar="KEY",
                            help="only this family (nic_models, video_models, "
                            "image_formats, cpu_features, firmware, ...)")
        parser.add_argument("--image-properties", action="store_true",
                            help="list image property values and the trait each requires "
                            "instead")
        parser.add_argument("--property", metavar="NAME",
                            help="with --image-properties: only this property "
                            "(hw_vif_model, disk_format, ...)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        capabilities = api_client(parsed_args, self.app.options).capabilities()
        if parsed_args.image_properties:
            known = [p["property"] for p in capabilities["image_properties"]]
            if parsed_args.property is not None and parsed_args.property not in known:
                raise ValueError(f"--property {parsed_args.property!r} is not one of "
                                 f"{', '.join(known)}")
            return PROPERTY_COLUMNS, property_rows(capabilities, parsed_args.property)
        if parsed_args.property is not None:
            raise ValueError("--property goes with --image-properties")
        known = [f["family"] for f in capabilities["families"]]
        if parsed_args.family is not None and parsed_args.family not in known:
            raise ValueError(f"--family {parsed_args.family!r} is not one of "
                             f"{', '.join(known)}")
        return TRAIT_COLUMNS, trait_rows(capabilities, parsed_args.family)


COMMANDS = {"capabilities": CapabilitiesList}
