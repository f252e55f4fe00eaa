"""[libvirt]: the libvirt driver, with upstream Nova's option names."""

from __future__ import annotations

from oslo_config import cfg

GROUP = "libvirt"

VIRT_TYPES = ("kvm", "qemu", "lxc", "parallels")

OPTS = (
    cfg.StrOpt(
        "virt_type",
        default="kvm",
        choices=[
            ("kvm", "QEMU with KVM acceleration"),
            ("qemu", "QEMU emulation (TCG), no hardware virtualization needed"),
            ("lxc", "Linux containers"),
            ("parallels", "Virtuozzo/Parallels"),
        ],
        help="Kind of guests libvirt runs.",
    ),
    cfg.StrOpt(
        "connection_uri",
        default="",
        help="libvirt URI. Empty means the usual one for virt_type (qemu:///system, "
        "lxc:///, parallels:///system). qemu:///embed?root=DIR runs QEMU from this "
        "process, with no libvirt daemon.",
    ),
    cfg.StrOpt(
        "images_type",
        default="default",
        choices=["default", "raw", "flat", "qcow2", "lvm", "rbd", "ploop"],
        help="Storage backend of guests' disks. With rbd (Ceph) or lvm and "
        "[DEFAULT] force_raw_images off, only raw images can be used.",
    ),
    cfg.ListOpt(
        "hw_machine_type",
        default=[],
        help="Default machine type per guest architecture, as ARCH=MACHINE pairs "
        "(x86_64=q35). Architectures not listed use libvirt's default.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
