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
    # Several simulated hosts on one machine (moorage run): each offers the size its
    # host group describes, not the machine's.
    cfg.IntOpt(
        "inventory_vcpus",
        default=0,
        min=0,
        help="VCPUs offered to placement instead of the host's own (0: the host's). "
        "For several hosts sharing one machine, as moorage run starts them.",
    ),
    cfg.IntOpt(
        "inventory_memory_mb",
        default=0,
        min=0,
        help="Memory in MiB offered to placement instead of the host's own (0: the "
        "host's). For several hosts sharing one machine, as moorage run starts them.",
    ),
    cfg.IntOpt(
        "inventory_disk_gb",
        default=0,
        min=0,
        help="Disk in GiB offered to placement instead of the size of instances_path's "
        "file system (0: that size). For several hosts sharing one machine.",
    ),
    cfg.IntOpt(
        "wait_soft_reboot_seconds",
        default=120,
        min=0,
        help="Seconds a soft reboot waits for the guest to shut down by itself (ACPI) "
        "before it power-cycles it instead (a hard reboot). Upstream's option.",
    ),
    cfg.BoolOpt(
        "stop_after_spawn",
        default=False,
        help="Stop each guest (in the background) as soon as QEMU has started it, "
        "keeping its domain defined until it is destroyed. The start is real, but no "
        "guest keeps running: for runs that boot many guests on one machine.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS), group=GROUP)
