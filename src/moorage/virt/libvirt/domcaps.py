"""libvirt's domain capabilities (``virsh domcapabilities``) as a typed value.

One document describes what one hypervisor can give a guest of one architecture
and machine type: disk buses, video models, firmware, TPM... The parser is pure
(bytes in, value out) so that discovery can be tested on documents captured from
a real QEMU. Elements it does not read are ignored, so newer libvirt versions
parse too; a document missing what it does read, or with a value of the wrong
shape there, is a ``DomainCapabilitiesError`` that names the document and the
element.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

# No entities, no network: the documents come from libvirt or an operator's file.
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)


class DomainCapabilitiesError(ValueError):
    """A domain capabilities document that cannot be read: where, and what is wrong."""

    def __init__(self, source: str, element: str, problem: str) -> None:
        super().__init__(f"{source}: <{element}>: {problem}")
        self.source = source
        self.element = element
        self.problem = problem


@dataclass(frozen=True)
class Device:
    """One ``<devices>`` child (disk, video, tpm...): supported or not, and its enums."""

    supported: bool = False
    enums: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def values(self, enum: str) -> tuple[str, ...]:
        """The values of one enum; none when the device is not supported at all."""
        return self.enums.get(enum, ()) if self.supported else ()


@dataclass(frozen=True)
class Firmware:
    """``<os>``: firmware the guest can boot, as libvirt can select or load it."""

    supported: bool = False
    # <enum name='firmware'>: what <os firmware='...'> can select (bios, efi).
    autoselect: tuple[str, ...] = ()
    # <loader>: the loader files libvirt knows, their types (rom, pflash) and
    # whether a secure-boot build is among them (secure: yes).
    loader_paths: tuple[str, ...] = ()
    loader_types: tuple[str, ...] = ()
    loader_secure: tuple[str, ...] = ()

    @property
    def uefi(self) -> bool:
        """An EFI build for this architecture and machine type can be selected. The
        loader files are no proof: libvirt 9.0 lists its built-in OVMF paths for i686
        guests too, which cannot boot them."""
        return self.supported and "efi" in self.autoselect

    @property
    def secure_boot(self) -> bool:
        return self.supported and "yes" in self.loader_secure


@dataclass(frozen=True)
class HostModelCpu:
    """``<cpu><mode name='host-model'>``: a named CPU model and the features libvirt
    says it adds to (``require``) or takes from (``disable``) that model. The model's
    own features are not listed: only libvirt's expansion of it says them all."""

    model: str
    required: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()


@dataclass(frozen=True)
class DomainCapabilities:
    """What a hypervisor offers guests of one architecture and machine type."""

    emulator: str | None
    virt_type: str
    arch: str
    # The canonical machine type (pc-q35-7.2), None for hypervisors without them.
    machine: str | None
    max_vcpus: int | None = None
    firmware: Firmware = Firmware()
    devices: Mapping[str, Device] = field(default_factory=dict)
    # <features>: gic, vmcoreinfo, genid, backup, sev, sgx, hyperv... -> supported
    features: Mapping[str, bool] = field(default_factory=dict)
    # The supported host-model CPU, None when it is not supported or names no model.
    host_model: HostModelCpu | None = None

    def device(self, name: str) -> Device:
        return self.devices.get(name, Device())

    @property
    def disk_buses(self) -> tuple[str, ...]:
        return self.device("disk").values("bus")

    @property
    def disk_devices(self) -> tuple[str, ...]:
        return self.device("disk").values("diskDevice")

    @property
    def video_models(self) -> tuple[str, ...]:
        return self.device("video").values("modelType")

    @property
    def graphics_types(self) -> tuple[str, ...]:
        return self.device("graphics").values("type")

    @property
    def tpm_models(self) -> tuple[str, ...]:
        return self.device("tpm").values("model")

    @property
    def tpm_backends(self) -> tuple[str, ...]:
        return self.device("tpm").values("backendModel")

    @property
    def tpm_versions(self) -> tuple[str, ...] | None:
        """TPM versions the emulator backend offers; None when libvirt does not say
        (it lists them only from 8.6.0 on, and only with an emulator backend)."""
        tpm = self.device("tpm")
        if not tpm.supported or "backendVersion" not in tpm.enums:
            return None
        return tpm.enums["backendVersion"]


def parse(document: str | bytes, source: str = "domain capabilities") -> DomainCapabilities:
    """Parse one document; ``source`` (a file name, a probe) is named in errors."""
    return _Reader(source).capabilities(root_element(document, source, "domainCapabilities"))


def root_element(document: str | bytes, source: str, tag: str,
                 error: type[DomainCapabilitiesError] = DomainCapabilitiesError
                 ) -> etree._Element:
    """The root of a libvirt document, which must be ``<tag>``; ``error`` otherwise."""
    data = document.encode() if isinstance(document, str) else document
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise error(source, tag, f"not well-formed XML: {exc.msg}") from None
    if root.tag != tag:
        raise error(source, tag, f"the document's root is <{root.tag}>")
    return root


def parse_file(path: str | Path) -> DomainCapabilities:
    """Parse a file; errors name it (and a missing or unreadable file is one too)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DomainCapabilitiesError(str(path), "domainCapabilities",
                                      f"cannot read the file: {exc.strerror}") from None
    return parse(data, str(path))


class _Reader:
    """Reads elements, raising errors that name the element by its path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, element: etree._Element, problem: str) -> DomainCapabilitiesError:
        return DomainCapabilitiesError(self.source, _path(element), problem)

    def capabilities(self, root: etree._Element) -> DomainCapabilities:
        vcpu = root.find("vcpu")
        devices = root.find("devices")
        features = root.find("features")
        return DomainCapabilities(
            emulator=self.optional_text(root, "path"),
            virt_type=self.text(root, "domain"),
            arch=self.text(root, "arch"),
            machine=self.optional_text(root, "machine"),
            max_vcpus=None if vcpu is None else self.integer(vcpu, "max"),
            firmware=self.firmware(root.find("os")),
            devices={} if devices is None else {
                child.tag: self.device(child) for child in devices
            },
            features={} if features is None else {
                child.tag: self.supported(child) for child in features
            },
            host_model=self.host_model(root.find("cpu/mode[@name='host-model']")),
        )

    def host_model(self, mode: etree._Element | None) -> HostModelCpu | None:
        if mode is None or mode.get("supported") != "yes":
            return None
        model = mode.find("model")
        if model is None or not (model.text or "").strip():
            return None
        named: dict[str, set[str]] = {"require": set(), "disable": set()}
        for feature in mode.findall("feature"):
            name, policy = feature.get("name"), feature.get("policy")
            if not name:
                raise self.error(feature, "a feature without a name")
            if policy in named:
                named[policy].add(name)
        return HostModelCpu((model.text or "").strip(), frozenset(named["require"]),
                            frozenset(named["disable"]))

    def text(self, parent: etree._Element, tag: str) -> str:
        value = self.optional_text(parent, tag)
        if value is None:
            raise DomainCapabilitiesError(self.source, f"{_path(parent)}/{tag}", "missing")
        return value

    def optional_text(self, parent: etree._Element, tag: str) -> str | None:
        child = parent.find(tag)
        if child is None:
            return None
        value = (child.text or "").strip()
        if not value:
            raise self.error(child, "empty")
        return value

    def integer(self, element: etree._Element, attribute: str) -> int:
        value = element.get(attribute)
        if value is None or not value.strip().isdigit():
            raise self.error(element, f"{attribute}={value!r} is not a whole number")
        return int(value)

    def supported(self, element: etree._Element) -> bool:
        value: str | None = element.get("supported")
        if value not in ("yes", "no"):
            raise self.error(element, f"supported={value!r} is neither 'yes' nor 'no'")
        return value == "yes"

    def enums(self, element: etree._Element) -> dict[str, tuple[str, ...]]:
        enums = {}
        for enum in element.findall("enum"):
            name = enum.get("name")
            if not name:
                raise self.error(enum, "an <enum> without a name")
            values = []
            for value in enum.findall("value"):
                text = (value.text or "").strip()
                if not text:
                    raise self.error(value, f"an empty value in enum {name!r}")
                values.append(text)
            enums[name] = tuple(values)
        return enums

    def device(self, element: etree._Element) -> Device:
        return Device(self.supported(element), self.enums(element))

    def firmware(self, os: etree._Element | None) -> Firmware:
        if os is None:
            return Firmware()
        enums = self.enums(os)
        loader = os.find("loader")
        if loader is None or not self.supported(loader):
            return Firmware(self.supported(os), enums.get("firmware", ()))
        loader_enums = self.enums(loader)
        paths = []
        for value in loader.findall("value"):
            text = (value.text or "").strip()
            if not text:
                raise self.error(value, "an empty loader path")
            paths.append(text)
        return Firmware(
            supported=self.supported(os),
            autoselect=enums.get("firmware", ()),
            loader_paths=tuple(paths),
            loader_types=loader_enums.get("type", ()),
            loader_secure=loader_enums.get("secure", ()),
        )


def _path(element: etree._Element) -> str:
    """``devices/disk/enum`` for an element: where it is from the root."""
    names = [str(element.tag)]
    parent = element.getparent()
    while parent is not None:
        names.append(str(parent.tag))
        parent = parent.getparent()
    return "/".join(reversed(names))
