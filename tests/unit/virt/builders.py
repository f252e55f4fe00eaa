"""Real configurations and guests for the driver tests."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from oslo_config import cfg

from moorage.conf import load_config
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.virt.driver import Guest
from moorage.virt.report import TraitReport

_uuids = (f"00000000-0000-4000-8000-{n:012d}" for n in itertools.count(1))


def config(**options: object) -> cfg.ConfigOpts:
    """A configuration with ``group__option=value`` overrides (``DEFAULT__host``...)."""
    overrides: list[tuple[str, str, object]] = [("DEFAULT", "host", "fake-host")]
    for key, value in options.items():
        group, name = key.split("__")
        overrides.append((group, name, value))
    return load_config(overrides=overrides)


def guest(node: str, disk_format: str = "raw", properties: Mapping[str, object] | None = None,
          extra_specs: Mapping[str, str] | None = None, uuid: str | None = None) -> Guest:
    """A small guest for ``node``: its image ``disk_format`` and ``properties`` (raw API
    values, validated as the compute API would), its flavor's ``extra_specs``."""
    instance = uuid or next(_uuids)
    return Guest(
        uuid=instance,
        name=f"server-{instance[-4:]}",
        node=node,
        flavor=Flavor("m1.small", vcpus=1, memory_mb=512, root_gb=1,
                      extra_specs=dict(extra_specs or {})),
        image=Image.create("0e5a3f4b-8f68-4c38-b8f7-3c0c5f1f8d6b", "image",
                           disk_format=disk_format, properties=properties),
    )


def by_trait(reports: list[TraitReport]) -> dict[str, TraitReport]:
    """Reports by trait; a trait reported twice would hide a bug, so it fails."""
    table = {r.trait: r for r in reports}
    assert len(table) == len(reports), f"a trait reported twice in {reports}"
    return table
