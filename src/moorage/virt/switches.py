"""Requested traits that switch a guest feature on, for every driver.

The decision recorded in the HPET discussion: a trait a flavor or an image
requires is not only a constraint on the host, it is the switch for the guest
feature it names. A required NIC, video, sound or vIOMMU model trait gives the
guest that model when its image does not name one (and conflicts with an image
that names another); a required ``COMPUTE_SECURITY_TPM_2_0`` gives it a TPM 2.0;
a firmware trait picks its firmware; ``COMPUTE_SECURITY_UEFI_SECURE_BOOT`` boots
it with secure boot. Storage bus traits only constrain the host.

The tables here are the guest-feature vocabulary every driver reads: the libvirt
driver builds from them (its own ``switches`` adds the CPU features), and the
VMware and Ironic drivers own the same families, switching on what their
platform can build and reporting the rest False.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import os_traits

from moorage.model import vocabulary
from moorage.model.image import Image


class FlavorImageConflict(ValueError):
    """The flavor and the image (or two traits) ask for things that exclude each other.

    Every host would refuse the guest the same way, so the build stops instead of
    rescheduling (``compute.wire.CONTRADICTIONS`` names it)."""


@dataclass(frozen=True)
class Choice:
    """A value the guest gets, and why: the image property, trait or default that chose it."""

    value: str
    source: str

    def __str__(self) -> str:
        return f"{self.value} ({self.source})"


def single(what: str, choices: Sequence[Choice]) -> Choice | None:
    """The one value ``choices`` agree on; FlavorImageConflict when they differ."""
    if len({c.value for c in choices}) > 1:
        raise FlavorImageConflict(f"conflicting {what}: " + ", ".join(map(str, choices)))
    return choices[0] if choices else None


# TPM traits: a version, a model, or how the vTPM secret is kept. Any of them
# asks for a TPM; the version and model ones also say which.
TPM_VERSIONS: Mapping[str, str] = {
    os_traits.COMPUTE_SECURITY_TPM_1_2: "1.2",
    os_traits.COMPUTE_SECURITY_TPM_2_0: "2.0",
}
TPM_MODELS: Mapping[str, str] = {
    os_traits.COMPUTE_SECURITY_TPM_TIS: "tpm-tis",
    os_traits.COMPUTE_SECURITY_TPM_CRB: "tpm-crb",
}
TPM_SECRET_SECURITY = frozenset({
    os_traits.COMPUTE_SECURITY_TPM_SECRET_SECURITY_USER,
    os_traits.COMPUTE_SECURITY_TPM_SECRET_SECURITY_HOST,
    os_traits.COMPUTE_SECURITY_TPM_SECRET_SECURITY_DEPLOYMENT,
})
TPM_TRAITS = frozenset({*TPM_VERSIONS, *TPM_MODELS, *TPM_SECRET_SECURITY})

# Firmware traits -> the firmware type they ask for.
FIRMWARE: Mapping[str, str] = {
    os_traits.COMPUTE_FIRMWARE_BIOS: "bios",
    os_traits.COMPUTE_FIRMWARE_UEFI: "uefi",
}
# The firmware type -> the trait that asks for it.
FIRMWARE_TRAIT: Mapping[str, str] = {kind: trait for trait, kind in FIRMWARE.items()}
SECURE_BOOT = os_traits.COMPUTE_SECURITY_UEFI_SECURE_BOOT
# Packed virtqueues on the guest's virtio NIC (upstream's hw:virtio_packed_ring).
VIRTIO_PACKED = os_traits.COMPUTE_NET_VIRTIO_PACKED


def tpm_traits(requested: Iterable[str]) -> list[str]:
    """The requested traits that ask for a TPM, sorted."""
    return sorted(t for t in requested if t in TPM_TRAITS)


def firmware_traits(requested: Iterable[str]) -> dict[str, str]:
    """The requested firmware traits, trait -> firmware type, sorted."""
    return {trait: FIRMWARE[trait] for trait in sorted(requested) if trait in FIRMWARE}


# The device-model properties whose required trait picks the guest's model (a bus
# trait only constrains the host): property -> {trait: model}, from the vocabulary.
def _models(prop: str) -> Mapping[str, str]:
    named = vocabulary.property_family(prop)
    return {named.trait(model): model for model in named.values}


MODEL_SWITCHES: Mapping[str, Mapping[str, str]] = {
    prop: _models(prop)
    for prop in ("hw_vif_model", "hw_video_model", "hw_sound_model", "hw_viommu_model")}


def model_traits(prop: str, requested: Iterable[str]) -> dict[str, str]:
    """The requested traits that pick a model for ``prop``, trait -> model, sorted."""
    family = MODEL_SWITCHES[prop]
    return {trait: family[trait] for trait in sorted(requested) if trait in family}


def chosen_model(prop: str, value: str | None, requested: frozenset[str]) -> Choice | None:
    """The model the image property names, or the one a required trait switches on;
    None when neither names one. FlavorImageConflict when they (or two traits) name
    different models."""
    choices = ([Choice(value, prop)] if value else []) + [
        Choice(model, trait) for trait, model in model_traits(prop, requested).items()]
    return single(prop.removeprefix("hw_").replace("_", " "), choices)


def guest_feature_traits() -> frozenset[str]:
    """Every trait that names a guest feature a driver builds or refuses: the models of
    the device properties (NIC, video, sound, vIOMMU) and the storage buses, TPM,
    firmware, secure boot and packed virtqueues. CPU features are the libvirt
    driver's alone."""
    buses = {vocabulary.property_family(p).trait(v)
             for p in ("hw_disk_bus", "hw_cdrom_bus")
             for v in vocabulary.property_family(p).values}
    models = {t for family in MODEL_SWITCHES.values() for t in family}
    return frozenset({*models, *buses, *TPM_TRAITS, *FIRMWARE, SECURE_BOOT, VIRTIO_PACKED}
                     & vocabulary.KNOWN)


def property_traits(image: Image) -> dict[str, str]:
    """{trait: "property=value"} for the guest features the image's properties outside
    the vocabulary's families ask for: ``hw_firmware_type``, ``hw_tpm_version``,
    ``hw_tpm_model`` and ``os_secure_boot=required``. A host that reported the trait
    unsupported cannot build them (``virt.driver.ReportedSupport.check``)."""
    props = image.properties
    found: dict[str, str] = {}
    firmware = props.hw_firmware_type
    if firmware is not None and firmware in FIRMWARE_TRAIT:
        found[FIRMWARE_TRAIT[firmware]] = f"hw_firmware_type={firmware}"
    if props.os_secure_boot == "required":
        found[SECURE_BOOT] = "os_secure_boot=required"
    for prop, table in (("hw_tpm_version", TPM_VERSIONS), ("hw_tpm_model", TPM_MODELS)):
        value = getattr(props, prop)
        for trait, named in table.items():
            if value == named:
                found[trait] = f"{prop}={value}"
    return found
