"""What a run measured: one ``ConfigurationResult`` per scheduling configuration.

The player fills these; the reports (terminal table, JSON, HTML) only read them.
``to_json`` is the ``--json`` format, one entry per configuration.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TypedDict

NO_VALID_HOST = frozenset({"NoValidHost", "MaxRetriesExceeded"})


@dataclass(frozen=True)
class Configuration:
    """One way of scheduling: a name, what it means, and the options it sets."""

    name: str          # "prefilters off", "image-type filter", ...
    description: str
    # (group, option, value) set on the compute API for this configuration.
    options: Sequence[tuple[str, str, object]] = ()


@dataclass(frozen=True)
class Exclusion:
    """A constraint that left a boot without hosts, and how many hosts it excluded."""

    constraint: str        # "required trait COMPUTE_NET_VIF_MODEL_E1000 (hw_vif_model=e1000)"
    hosts_excluded: int
    hosts_total: int


@dataclass(frozen=True)
class Refusal:
    """A host that refused a build at spawn (its late check, or the hypervisor), and
    the feature it named; the build then went to an alternate or failed."""

    host: str
    feature: str


@dataclass(frozen=True)
class BootResult:
    """One boot of the workload."""

    index: int
    image: str
    flavor: str
    status: str                    # ACTIVE or ERROR
    host: str | None
    spawn_attempts: int            # spawns tried (0 when scheduling found no host)
    candidates: int | None         # allocation candidates placement returned
    scheduling_seconds: float | None
    fault: str | None              # "NoValidHost", "MaxRetriesExceeded", ... or None
    message: str | None = None     # the fault's message
    exclusions: Sequence[Exclusion] = ()
    server_id: str | None = None
    refusals: Sequence[Refusal] = ()


@dataclass
class ConfigurationResult:
    configuration: Configuration
    boots: list[BootResult] = field(default_factory=list)
    wall_seconds: float = 0.0      # its cloud's start and stop included
    boots_seconds: float = 0.0     # from the first create to the last server at rest
    concurrency: int = 1           # servers booted at a time

    @property
    def boots_per_second(self) -> float | None:
        return len(self.boots) / self.boots_seconds if self.boots_seconds > 0 else None

    @property
    def active(self) -> int:
        return sum(1 for b in self.boots if b.status == "ACTIVE")

    @property
    def no_valid_host(self) -> int:
        """Boots that found no host: at scheduling (NoValidHost) or after running out of
        alternates (MaxRetriesExceeded, which upstream derives from NoValidHost)."""
        return sum(1 for b in self.boots if b.fault in NO_VALID_HOST)

    @property
    def max_retries_exceeded(self) -> int:
        return sum(1 for b in self.boots if b.fault == "MaxRetriesExceeded")

    @property
    def other_errors(self) -> int:
        return sum(1 for b in self.boots
                   if b.status != "ACTIVE" and b.fault not in NO_VALID_HOST)

    @property
    def reschedules(self) -> int:
        """Spawns beyond the first, over every boot: what the late checks cost."""
        return sum(max(0, b.spawn_attempts - 1) for b in self.boots)

    @property
    def spawn_attempts(self) -> int:
        return sum(b.spawn_attempts for b in self.boots)

    def candidates_mean(self) -> float | None:
        found = [b.candidates for b in self.boots if b.candidates is not None]
        return statistics.fmean(found) if found else None

    def latency(self, quantile: float) -> float | None:
        """Scheduling latency (seconds) at ``quantile`` (0.5, 0.95), nearest rank."""
        found = sorted(b.scheduling_seconds for b in self.boots
                       if b.scheduling_seconds is not None)
        if not found:
            return None
        rank = max(0, min(len(found) - 1, round(quantile * len(found) + 0.5) - 1))
        return found[rank]

    def failures_by_constraint(self) -> list[tuple[str, int, int]]:
        """(constraint, boots it failed, most hosts it excluded), most frequent first."""
        counts: dict[str, list[int]] = {}
        for boot in self.boots:
            for exclusion in boot.exclusions:
                entry = counts.setdefault(exclusion.constraint, [0, 0])
                entry[0] += 1
                entry[1] = max(entry[1], exclusion.hosts_excluded)
        return sorted(((c, n, h) for c, (n, h) in counts.items()),
                      key=lambda item: (-item[1], item[0]))

    def refusals(self) -> list[tuple[str, str, int]]:
        """(host, feature, builds it refused) over every boot, most frequent first."""
        counts: dict[tuple[str, str], int] = {}
        for boot in self.boots:
            for refusal in boot.refusals:
                key = (refusal.host, refusal.feature)
                counts[key] = counts.get(key, 0) + 1
        return sorted(((h, f, n) for (h, f), n in counts.items()),
                      key=lambda item: (-item[2], item[0], item[1]))

    def summary(self) -> dict[str, object]:
        return {
            "configuration": self.configuration.name,
            "description": self.configuration.description,
            "options": [list(o) for o in self.configuration.options],
            "boots": len(self.boots),
            "active": self.active,
            "no_valid_host": self.no_valid_host,
            "max_retries_exceeded": self.max_retries_exceeded,
            "other_errors": self.other_errors,
            "spawn_attempts": self.spawn_attempts,
            "reschedules": self.reschedules,
            "candidates_mean": self.candidates_mean(),
            "scheduling_latency_p50_ms": _ms(self.latency(0.5)),
            "scheduling_latency_p95_ms": _ms(self.latency(0.95)),
            "failures": [{"constraint": c, "boots": n, "hosts_excluded": h}
                         for c, n, h in self.failures_by_constraint()],
            "refused_at_spawn": [{"host": h, "feature": f, "builds": n}
                                 for h, f, n in self.refusals()],
            "wall_seconds": round(self.wall_seconds, 3),
            "boots_seconds": round(self.boots_seconds, 3),
            "boots_per_second": (round(self.boots_per_second, 1)
                                 if self.boots_per_second is not None else None),
            "concurrency": self.concurrency,
        }


class WorkloadBoot(TypedDict):
    """One boot of the workload, in the order it is played."""

    index: int
    image: str
    flavor: str


class Machine(TypedDict, total=False):
    """Where the run ran, for whoever compares two runs' figures."""

    platform: str
    python: str
    cpus: int | None
    moorage: str


@dataclass
class RunResult:
    """A whole run: the cloud it played, how, and each configuration's result."""

    cloud_name: str
    cloud_file: str
    seed: int
    hosts: list[dict[str, object]]     # name, group, driver, real (libvirt on QEMU?) ...
    workload: list[WorkloadBoot]
    configurations: list[ConfigurationResult] = field(default_factory=list)
    machine: Machine = field(default_factory=Machine)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "cloud": self.cloud_name,
            "cloud_file": self.cloud_file,
            "seed": self.seed,
            "machine": self.machine,
            "hosts": self.hosts,
            "notes": self.notes,
            "configurations": [
                {**result.summary(), "servers": [asdict(b) for b in result.boots]}
                for result in self.configurations
            ],
        }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)
