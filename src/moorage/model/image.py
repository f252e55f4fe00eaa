"""Images as metadata (no bytes): disk format and the ``hw_*`` properties that say what
virtual hardware a guest wants.

The property values are enums with upstream Nova's spellings and legacy aliases
(``VirtualE1000`` is ``e1000``, ``amd64`` is ``x86_64``); ``parse_properties``
canonicalizes them and refuses anything else with an error naming the property
and the allowed values, so a bad image fails when it is written, not at boot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DISK_FORMATS = ("ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop")
CONTAINER_FORMATS = ("ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed")
# What an image that does not say (a glance image before its formats are set) is.
DEFAULT_DISK_FORMAT = "qcow2"
DEFAULT_CONTAINER_FORMAT = "bare"

DISK_BUSES = ("fdc", "ide", "sata", "scsi", "usb", "virtio", "xen", "lxc", "uml")
VIDEO_MODELS = ("cirrus", "qxl", "vga", "vmvga", "xen", "virtio", "gop", "none", "bochs")
VIF_MODELS = ("virtio", "ne2k_pci", "pcnet", "rtl8139", "e1000", "e1000e", "netfront",
              "spapr-vlan", "lan9118", "sriov", "vmxnet", "vmxnet3", "igb")
# VMware's names for NIC models, accepted as aliases (case-insensitively).
VIF_MODEL_ALIASES = {
    "virtuale1000": "e1000",
    "virtuale1000e": "e1000e",
    "virtualpcnet32": "pcnet",
    "virtualsriovethernetcard": "sriov",
    "virtualvmxnet": "vmxnet",
    "virtualvmxnet3": "vmxnet3",
}
ARCHITECTURES = ("alpha", "armv6", "armv7l", "armv7b", "aarch64", "cris", "i686", "ia64", "lm32",
                 "m68k", "microblaze", "microblazeel", "mips", "mipsel", "mips64", "mips64el",
                 "openrisc", "parisc", "parisc64", "ppc", "ppcle", "ppc64", "ppc64le", "ppcemb",
                 "s390", "s390x", "sh4", "sh4eb", "sparc", "sparc64", "unicore32", "x86_64",
                 "xtensa", "xtensaeb")
ARCHITECTURE_ALIASES = {"i386": "i686", "i486": "i686", "i586": "i686", "x86_32": "i686",
                        "amd64": "x86_64"}
VIOMMU_MODELS = ("intel", "smmuv3", "virtio", "auto")
FIRMWARE_TYPES = ("bios", "uefi")
SECURE_BOOT = ("required", "disabled", "optional")
TPM_MODELS = ("tpm-tis", "tpm-crb")
TPM_VERSIONS = ("1.2", "2.0")
SCSI_MODELS = ("buslogic", "ibmvscsi", "lsilogic", "lsisas1068", "lsisas1078", "virtio-scsi",
               "vmpvscsi")
SOUND_MODELS = ("sb16", "es1370", "pcspk", "ac97", "ich6", "ich9", "usb", "virtio")

_TRUE = ("1", "t", "true", "on", "y", "yes")


class InvalidImageProperty(ValueError):
    """An image property whose value is not one the property allows."""

    def __init__(self, name: str, value: object, allowed: tuple[str, ...] | str) -> None:
        shown = allowed if isinstance(allowed, str) else ", ".join(allowed)
        super().__init__(f"{name}: {value!r} is not valid; allowed: {shown}")
        self.name = name
        self.value = value
        self.allowed = allowed


def _choice(name: str, value: object, allowed: tuple[str, ...],
            aliases: Mapping[str, str] | None = None) -> str:
    text = str(value).strip()
    lowered = text.lower()
    if aliases and lowered in aliases:
        return aliases[lowered]
    if lowered in allowed:
        return lowered
    raise InvalidImageProperty(name, value, allowed)


def flexible_bool(value: object) -> bool:
    """Upstream's lenient booleans: "true", "yes", "1"... are true; anything else false."""
    return str(value).strip().lower() in _TRUE


# property name -> (allowed values, aliases)
_ENUMS: dict[str, tuple[tuple[str, ...], Mapping[str, str] | None]] = {
    "hw_disk_bus": (DISK_BUSES, None),
    "hw_cdrom_bus": (DISK_BUSES, None),
    "hw_video_model": (VIDEO_MODELS, None),
    "hw_vif_model": (VIF_MODELS, VIF_MODEL_ALIASES),
    "hw_architecture": (ARCHITECTURES, ARCHITECTURE_ALIASES),
    "hw_emulation_architecture": (ARCHITECTURES, ARCHITECTURE_ALIASES),
    "hw_viommu_model": (VIOMMU_MODELS, None),
    "hw_firmware_type": (FIRMWARE_TYPES, None),
    "os_secure_boot": (SECURE_BOOT, None),
    "hw_tpm_model": (TPM_MODELS, None),
    "hw_tpm_version": (TPM_VERSIONS, None),
    "hw_scsi_model": (SCSI_MODELS, None),
    "hw_sound_model": (SOUND_MODELS, None),
}
_BOOLEANS = ("hw_time_hpet", "hw_firmware_stateless")
TRAIT_PREFIX = "trait:"


def enum_values(name: str) -> tuple[str, ...]:
    """The canonical values an enum property allows (``hw_vif_model`` -> its 13 NIC
    models); ``disk_format`` too. KeyError for a property that is not an enum."""
    if name == "disk_format":
        return DISK_FORMATS
    return _ENUMS[name][0]


@dataclass(frozen=True)
class ImageProperties:
    """The hardware-relevant properties of an image, canonicalized."""

    hw_disk_bus: str | None = None
    hw_cdrom_bus: str | None = None
    hw_video_model: str | None = None
    hw_vif_model: str | None = None
    hw_architecture: str | None = None
    hw_emulation_architecture: str | None = None
    hw_viommu_model: str | None = None
    hw_machine_type: str | None = None
    hw_firmware_type: str | None = None
    os_secure_boot: str | None = None
    hw_tpm_model: str | None = None
    hw_tpm_version: str | None = None
    hw_scsi_model: str | None = None
    hw_sound_model: str | None = None
    hw_time_hpet: bool = False
    hw_firmware_stateless: bool = False
    # ``trait:NAME=required``: traits the image requires of its host.
    traits_required: frozenset[str] = frozenset()
    # Everything else the image carries, unchanged.
    other: Mapping[str, str] = field(default_factory=dict)

    def raw(self) -> dict[str, str]:
        """The properties as an image service stores them (canonical spellings)."""
        raw: dict[str, str] = {}
        for name in (*_ENUMS, "hw_machine_type"):
            value = getattr(self, name)
            if value is not None:
                raw[name] = str(value)
        for name in _BOOLEANS:
            if getattr(self, name):
                raw[name] = "true"
        raw.update({f"{TRAIT_PREFIX}{t}": "required" for t in sorted(self.traits_required)})
        raw.update(self.other)
        return raw


def parse_properties(properties: Mapping[str, object]) -> ImageProperties:
    """Canonicalize image properties; InvalidImageProperty for a bad enum value."""
    values: dict[str, object] = {}
    traits: set[str] = set()
    other: dict[str, str] = {}
    for name, value in properties.items():
        if name in _ENUMS:
            allowed, aliases = _ENUMS[name]
            values[name] = _choice(name, value, allowed, aliases)
        elif name in _BOOLEANS:
            values[name] = flexible_bool(value)
        elif name == "hw_machine_type":
            values[name] = str(value).strip()
        elif name.startswith(TRAIT_PREFIX):
            # Only exactly "trait:NAME" = "required" counts; upstream ignores the rest.
            if str(value) == "required":
                traits.add(name[len(TRAIT_PREFIX):])
        else:
            other[name] = str(value)
    return ImageProperties(**values, traits_required=frozenset(traits),  # type: ignore[arg-type]
                           other=other)


@dataclass(frozen=True)
class Image:
    """An image as the compute API knows it: its metadata, and whether it has data.

    ``size`` is Glance's: the bytes of the image's data, None for an image without
    any (metadata only). A host downloads the data of an image that has some (into
    its image cache, ``moorage.virt.image_cache``) and boots from it; an image
    without data boots an empty root disk."""

    id: str
    name: str
    disk_format: str = DEFAULT_DISK_FORMAT
    container_format: str = DEFAULT_CONTAINER_FORMAT
    properties: ImageProperties = field(default_factory=ImageProperties)
    min_disk_gb: int = 0
    min_ram_mb: int = 0
    size: int | None = None

    @classmethod
    def create(cls, id: str, name: str, disk_format: str = DEFAULT_DISK_FORMAT,
               container_format: str = DEFAULT_CONTAINER_FORMAT,
               properties: Mapping[str, object] | None = None,
               *, min_disk_gb: int = 0, min_ram_mb: int = 0,
               size: int | None = None) -> Image:
        """An image from raw (API) values, validated."""
        disk = _choice("disk_format", disk_format, DISK_FORMATS)
        container = _choice("container_format", container_format, CONTAINER_FORMATS)
        return cls(id, name, disk, container, parse_properties(properties or {}),
                   min_disk_gb=min_disk_gb, min_ram_mb=min_ram_mb, size=size)
