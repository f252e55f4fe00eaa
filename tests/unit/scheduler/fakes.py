"""Stand-ins for what the compute API gives the scheduler: a request spec built from
a flavor and image, and a catalog of hosts and aggregates (a stand-in for the API's
services and aggregates tables)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from oslo_config import cfg

from moorage.conf import load_config
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.placement.provider_names import provider_uuid as _provider_uuid
from moorage.scheduler.types import Aggregate, HostInfo, Liveness, RequestSpec

INSTANCE = "0b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a41"


def spec(flavor: Flavor | None = None, *, extra_specs: Mapping[str, str] | None = None,
         disk_format: str = "qcow2", properties: Mapping[str, object] | None = None,
         **kwargs: object) -> RequestSpec:
    """A request spec for a small flavor and an image with ``properties``."""
    flavor = flavor or Flavor("small", 2, 512, root_gb=1, extra_specs=dict(extra_specs or {}))
    image = Image.create("img-1", "cirros", disk_format, properties=properties or {})
    return RequestSpec(INSTANCE, "project-a", "user-a", flavor, image, **kwargs)  # type: ignore[arg-type]


def conf(**options: object) -> cfg.ConfigOpts:
    """Options as ``group__name=value`` keyword arguments."""
    overrides = [(*key.split("__"), value) for key, value in options.items()]
    return load_config(overrides=overrides)  # type: ignore[arg-type]


@dataclass
class FakeCatalog:
    """A stand-in for the compute API's services and aggregates tables."""

    host_infos: dict[str, HostInfo] = field(default_factory=dict)
    aggregate_list: list[Aggregate] = field(default_factory=list)

    def hosts(self) -> Mapping[str, HostInfo]:
        return dict(self.host_infos)

    def aggregates(self) -> Sequence[Aggregate]:
        return list(self.aggregate_list)

    def aggregates_of(self, host: str) -> Sequence[Aggregate]:
        return [a for a in self.aggregate_list if host in a.hosts]

    def node_of_provider(self, provider_uuid: str) -> tuple[str, str] | None:
        return next(((h.host, node) for h in self.host_infos.values() for node in h.nodes
                     if _provider_uuid(node) == provider_uuid), None)

    def add_host(self, name: str, *, enabled: bool = True, up: bool = True,
                 driver: str = "fake",
                 supported_instances: Sequence[tuple[str, str, str]] = (),
                 hypervisor_version: int | None = None,
                 nodes: Sequence[str] = ()) -> HostInfo:
        info = HostInfo(name, list(nodes) or [name], enabled, Liveness.fixed(up), driver,
                        supported_instances, hypervisor_version)
        self.host_infos[name] = info
        return info
