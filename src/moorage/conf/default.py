"""[DEFAULT]: the host a compute agent runs on, its driver, how its capacity is offered,
where the compute API listens and how the services recognise each other."""

from __future__ import annotations

import socket

from oslo_config import cfg

GROUP = "DEFAULT"

DRIVERS = ("libvirt", "fake", "vmware", "ironic")

OPTS = (
    cfg.StrOpt(
        "host",
        default=socket.gethostname(),
        sample_default="<hostname>",
        help="Name of this host; its compute node provider is named after it.",
    ),
    cfg.StrOpt(
        "compute_driver",
        default="libvirt",
        help="The hypervisor driver: libvirt, fake, vmware (a simulated vCenter host) or "
        "ironic (simulated bare-metal nodes). Upstream's spellings "
        "(libvirt.LibvirtDriver, fake.FakeDriver, ...) are accepted.",
    ),
    cfg.IntOpt(
        "update_resources_interval",
        default=60,
        min=1,
        help="Seconds between two syncs of this host's providers (inventories, traits) "
        "with placement.",
    ),
    cfg.FloatOpt("cpu_allocation_ratio", default=4.0, min=0.0,
                 help="Virtual CPUs offered per physical CPU (VCPU allocation_ratio)."),
    cfg.FloatOpt("ram_allocation_ratio", default=1.0, min=0.0,
                 help="Memory offered per MiB of host memory (MEMORY_MB allocation_ratio)."),
    cfg.FloatOpt("disk_allocation_ratio", default=1.0, min=0.0,
                 help="Disk offered per GiB of instance storage (DISK_GB allocation_ratio)."),
    cfg.IntOpt("reserved_host_cpus", default=0, min=0,
               help="Physical CPUs kept for the host (VCPU reserved)."),
    cfg.IntOpt("reserved_host_memory_mb", default=512, min=0,
               help="Memory kept for the host, in MiB (MEMORY_MB reserved)."),
    cfg.IntOpt("reserved_host_disk_mb", default=0, min=0,
               help="Disk kept for the host, in MiB (DISK_GB reserved, rounded up)."),
    cfg.BoolOpt(
        "force_raw_images",
        default=True,
        help="Convert downloaded images to raw. With [libvirt] images_type rbd or lvm and "
        "this off, the host can only take raw images and stops reporting "
        "COMPUTE_IMAGE_TYPE_QCOW2.",
    ),
    cfg.StrOpt(
        "instances_path",
        default="/var/lib/moorage/instances",
        help="Where guests' disks live; DISK_GB is the size of this file system.",
    ),
    cfg.HostAddressOpt(
        "osapi_compute_listen",
        default="127.0.0.1",
        help="Address `moorage api serve` listens on. The default accepts local "
        "clients only; use 0.0.0.0 to serve other machines.",
    ),
    cfg.PortOpt("osapi_compute_listen_port", default=8774,
                help="TCP port `moorage api serve` listens on."),
    cfg.IntOpt(
        "osapi_compute_workers",
        default=1,
        min=1,
        help="Server processes of `moorage api serve` (upstream's option). Each runs "
        "its own conductor (unless [conductor] run_in_api is off); use several with "
        "PostgreSQL.",
    ),
    cfg.IntOpt(
        "osapi_compute_threads",
        default=16,
        min=1,
        help="Request threads per compute API server process.",
    ),
    cfg.IntOpt(
        "service_down_time",
        default=60,
        min=1,
        help="Seconds after its last heartbeat at which a compute service counts as "
        "down (the scheduler then skips its host).",
    ),
    cfg.IntOpt("report_interval", default=10, min=1,
               help="Seconds between two heartbeats of a compute agent to the compute API."),
    cfg.IntOpt(
        "shutdown_timeout",
        default=60,
        min=0,
        help="Seconds a compute agent gives a guest to power itself off cleanly (ACPI) "
        "when it is stopped, before the guest is powered off by force. Upstream's "
        "option.",
    ),
    cfg.IntOpt(
        "graceful_shutdown_timeout",
        default=60,
        min=0,
        help="Seconds a stopping service (SIGTERM, `systemctl stop`) gives the requests "
        "in flight to finish, after it stopped accepting new connections; then the "
        "server processes still busy are killed. 0 waits without limit (the unit's "
        "TimeoutStopSec then bounds it). Upstream's oslo.service option.",
    ),
    cfg.StrOpt(
        "service_token",
        secret=True,
        help="Shared secret the compute API, its conductors and the compute agents send "
        "each other in X-Service-Token on their internal routes (the agents' "
        "registrations and heartbeats, the conductor's spawns and deletes). Unset: those "
        "routes refuse every write (401) unless allow_anonymous_internal_writes is on; "
        "set the same secret on every service.",
    ),
    cfg.BoolOpt(
        "allow_anonymous_internal_writes",
        default=False,
        help="DEVELOPMENT ONLY. With service_token unset, let anyone who can reach them "
        "write to the internal routes: register a host and point the conductor at any "
        "URL (PUT /internal/services/{host}), spawn or destroy guests on an agent (POST "
        "/guests, DELETE /guests/{uuid}, PUT /service). Whatever [api] auth_strategy is. "
        "No effect when service_token is set.",
    ),
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(list(OPTS))
