"""``moorage image create|list|show|set|unset|delete``: images of the image service
(glance v2 at /image on the compute API's listener): name, formats, properties such
as hw_vif_model=e1000. Their data is uploaded with glance's clients
(``PUT /image/v2/images/{id}/file``)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from cliff.command import Command
from cliff.lister import Lister
from cliff.show import ShowOne

from moorage.api.client import ComputeApiClient, Json
from moorage.cli.api_options import (
    DictColumn,
    add_api_arguments,
    api_client,
    find,
    key_values,
)
from moorage.cli.output import Fields, Table
from moorage.cli.properties import SetProperties, UnsetProperties

VISIBILITIES = ("public", "private", "shared", "community")
# The record's attributes the commands show, in this order; "properties" last.
ATTRIBUTES = ("id", "name", "disk_format", "container_format", "min_disk", "min_ram",
              "visibility", "owner", "created_at", "updated_at")


def find_image(client: ComputeApiClient, ref: str) -> Json:
    """An image by id or by name."""
    return find("image", ref, client.image, client.images)


def image_fields(image: Json) -> dict[str, object]:
    fields: dict[str, object] = {name: image[name] for name in ATTRIBUTES if name in image}
    fields["properties"] = DictColumn(dict(image.get("properties") or {}))
    return fields


def _add_attribute_arguments(parser: argparse.ArgumentParser, *, creating: bool) -> None:
    default = " (default: unset, read as qcow2/bare until set)" if creating else ""
    parser.add_argument("--disk-format", metavar="FORMAT",
                        help=f"raw, qcow2, vmdk, vdi, iso, ploop, ...{default}")
    parser.add_argument("--container-format", metavar="FORMAT",
                        help=f"bare, ovf, ova, ...{default}")
    parser.add_argument("--min-disk", type=int, metavar="GB",
                        help="the root disk size it needs, in GB")
    parser.add_argument("--min-ram", type=int, metavar="MB",
                        help="the memory it needs, in MB")
    parser.add_argument("--visibility", choices=VISIBILITIES,
                        help="who may use it (public images are an administrator's)"
                        + ("" if not creating else "; default: shared (glance's), "
                           "seen by its project and the projects it is shared with"))
    parser.add_argument("--property", metavar="KEY=VALUE", action="append", default=[],
                        help="an image property, e.g. hw_vif_model=e1000 or "
                        "trait:HW_CPU_X86_AVX2=required (repeatable)")


class ImageCreate(ShowOne):
    """Create an image (queued until its data is uploaded)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("name", help="the new image's name")
        parser.add_argument("--id", dest="image_id", metavar="UUID",
                            help="the image's id (default: the API chooses one)")
        _add_attribute_arguments(parser, creating=True)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Fields:
        properties = key_values(parsed_args.property)
        image = api_client(parsed_args, self.app.options).create_image(
            parsed_args.name, disk_format=parsed_args.disk_format,
            container_format=parsed_args.container_format, properties=properties,
            min_disk=parsed_args.min_disk, min_ram=parsed_args.min_ram,
            visibility=parsed_args.visibility, image_id=parsed_args.image_id)
        fields = image_fields(image)
        return tuple(fields), tuple(fields.values())


class ImageList(Lister):
    """List images (with --long, their properties too)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("--long", action="store_true", help="also show properties")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        columns = ["id", "name", "disk_format", "container_format"]
        if parsed_args.long or "properties" in (parsed_args.columns or ()):
            columns.append("properties")
        rows = [image_fields(image) for image in api_client(parsed_args, self.app.options).images()]
        return columns, [[row.get(c) for c in columns] for row in rows]


class ImageShow(ShowOne):
    """Show an image's metadata."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("image", help="image name or id")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Fields:
        client = api_client(parsed_args, self.app.options)
        fields = image_fields(find_image(client, parsed_args.image))
        return tuple(fields), tuple(fields.values())


class ImageSet(SetProperties):
    """Change an image's name, formats or properties."""

    noun = "image"
    options = ("--name, --disk-format, --container-format, --min-disk, --min-ram, "
               "--visibility or --property")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--name", help="a new name")
        _add_attribute_arguments(parser, creating=False)

    def changes(self, parsed_args: argparse.Namespace) -> dict[str, object]:
        return {name: value for name, value in (
            ("name", parsed_args.name), ("disk_format", parsed_args.disk_format),
            ("container_format", parsed_args.container_format),
            ("min_disk", parsed_args.min_disk), ("min_ram", parsed_args.min_ram),
            ("visibility", parsed_args.visibility)) if value is not None}

    def apply(self, client: ComputeApiClient, ref: str, changes: Mapping[str, object],
              properties: Mapping[str, str]) -> None:
        update = {**changes, **({"properties": dict(properties)} if properties else {})}
        client.update_image(str(find_image(client, ref)["id"]), update)


class ImageUnset(UnsetProperties):
    """Remove properties from an image."""

    noun, item = "image", "a property"

    def unset(self, client: ComputeApiClient, ref: str, names: list[str]) -> None:
        image = find_image(client, ref)
        missing = [name for name in names if name not in (image.get("properties") or {})]
        if missing:
            raise ValueError(f"image {image['id']} has no property {', '.join(missing)}")
        client.update_image(str(image["id"]), {"properties": dict.fromkeys(names)})


class ImageDelete(Command):
    """Delete images and their data (servers keep the copy they were built from)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("images", nargs="+", metavar="IMAGE",
                            help="image name or id (repeatable)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        client = api_client(parsed_args, self.app.options)
        for ref in parsed_args.images:
            client.delete_image(str(find_image(client, ref)["id"]))
        return 0


COMMANDS: dict[str, type[Command]] = {
    "image create": ImageCreate,
    "image list": ImageList,
    "image show": ImageShow,
    "image set": ImageSet,
    "image unset": ImageUnset,
    "image delete": ImageDelete,
}
