"""The figures every report shows, defined once: the rows of the comparison, which of them
are charted, the failures of a configuration and the cloud's host groups."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from moorage.run.results import ConfigurationResult, RunResult

MISSING = "-"   # a figure the run could not measure (no boot reached the scheduler, ...)


@dataclass(frozen=True)
class Figure:
    """One row of the comparison: how to read it from a result and how to print it."""

    label: str
    measure: Callable[[ConfigurationResult], float | None]
    decimals: int = 0
    unit: str = ""
    # Set when the figure has a chart: its data-chart key and its title.
    chart: str | None = None
    chart_title: str = ""

    def value(self, result: ConfigurationResult) -> float | None:
        return self.measure(result)

    def text(self, result: ConfigurationResult) -> str:
        """The value as printed, without the unit (the label carries it)."""
        value = self.measure(result)
        return MISSING if value is None else f"{value:,.{self.decimals}f}"


def _latency_ms(quantile: float) -> Callable[[ConfigurationResult], float | None]:
    def measure(result: ConfigurationResult) -> float | None:
        seconds = result.latency(quantile)
        return None if seconds is None else seconds * 1000
    return measure


FIGURES: tuple[Figure, ...] = (
    Figure("boots", lambda r: len(r.boots)),
    Figure("ACTIVE", lambda r: r.active,
           chart="active", chart_title="Servers ACTIVE (more is better)"),
    Figure("NoValidHost", lambda r: r.no_valid_host,
           chart="no-valid-host", chart_title="NoValidHost errors (fewer is better)"),
    Figure("  of which MaxRetriesExceeded", lambda r: r.max_retries_exceeded),
    Figure("other errors", lambda r: r.other_errors),
    Figure("spawn attempts", lambda r: r.spawn_attempts),
    Figure("reschedules", lambda r: r.reschedules,
           chart="reschedules", chart_title="Reschedules: spawns beyond the first"),
    Figure("candidates per request (mean)", lambda r: r.candidates_mean(), decimals=1,
           chart="candidates", chart_title="Allocation candidates per request (mean)"),
    Figure("scheduling latency p50 ms", _latency_ms(0.5), decimals=1, unit="ms",
           chart="latency-p50", chart_title="Scheduling latency p50 (ms)"),
    Figure("scheduling latency p95 ms", _latency_ms(0.95), decimals=1, unit="ms",
           chart="latency-p95", chart_title="Scheduling latency p95 (ms)"),
    Figure("boots per second", lambda r: r.boots_per_second, decimals=1),
    Figure("wall time s", lambda r: r.wall_seconds, decimals=1, unit="s"),
)

CHARTED: tuple[Figure, ...] = tuple(f for f in FIGURES if f.chart)


@dataclass(frozen=True)
class Failure:
    """Boots that failed for one reason: a constraint that excluded hosts, or a bare fault."""

    reason: str
    boots: int
    hosts_excluded: int | None = None   # the most hosts the constraint excluded in one boot
    hosts_total: int | None = None

    def sentence(self) -> str:
        boots = f"{self.boots} boot{'' if self.boots == 1 else 's'}"
        if self.hosts_excluded is None:
            return f"{self.reason}: {boots}"
        of_total = "" if self.hosts_total is None else f" of {self.hosts_total}"
        return f"{self.reason}: {boots}, excluded {self.hosts_excluded}{of_total} hosts"


def failures(result: ConfigurationResult) -> list[Failure]:
    """The constraints that left boots without hosts (most frequent first), then the
    failed boots no constraint explains, grouped by fault."""
    found = [Failure(constraint, boots, excluded, _hosts_total(result, constraint, excluded))
             for constraint, boots, excluded in result.failures_by_constraint()]
    bare: dict[str, int] = {}
    for boot in result.boots:
        if boot.status != "ACTIVE" and not boot.exclusions:
            fault = boot.fault or boot.status
            bare[fault] = bare.get(fault, 0) + 1
    found += [Failure(f"{fault} (no constraint recorded)", count)
              for fault, count in sorted(bare.items(), key=lambda item: (-item[1], item[0]))]
    return found


def _hosts_total(result: ConfigurationResult, constraint: str, excluded: int) -> int | None:
    # failures_by_constraint reports the most hosts excluded; the total is the one recorded
    # with that exclusion.
    for boot in result.boots:
        for exclusion in boot.exclusions:
            if exclusion.constraint == constraint and exclusion.hosts_excluded == excluded:
                return exclusion.hosts_total
    return None


@dataclass(frozen=True)
class HostGroup:
    """Hosts of one group of the cloud description, and how they were run."""

    name: str
    driver: str
    hosts: tuple[str, ...]
    real: int        # libvirt hosts on real QEMU
    recorded: int    # libvirt hosts from recorded domain capabilities
    details: tuple[tuple[str, str], ...]   # other attributes all the group's hosts share

    @property
    def how(self) -> str:
        """How the group's hosts ran, in the words the report uses."""
        if self.driver != "libvirt":
            return "simulated, in process"
        parts = []
        if self.real:
            parts.append(f"{self.real} on real QEMU")
        if self.recorded:
            parts.append(f"{self.recorded} from recorded capabilities")
        return ", ".join(parts) or "libvirt"


_HOST_KEYS = ("name", "group", "driver", "real")


@dataclass(frozen=True)
class SpawnRefusals:
    """What one group's hosts refused at spawn in one configuration."""

    group: HostGroup
    feature: str
    builds: int
    hosts: tuple[str, ...]

    def sentence(self) -> str:
        """``COMPUTE_STORAGE_BUS_IDE: 6 builds on q35 (2 of 2 hosts; libvirt, 2 on real
        QEMU)``."""
        return (f"{self.feature}: {self.builds} build{'s' if self.builds != 1 else ''} on "
                f"{self.group.name} ({len(self.hosts)} of {len(self.group.hosts)} hosts; "
                f"{self.group.driver}, {self.group.how})")


def refused_at_spawn(run: RunResult, result: ConfigurationResult) -> list[SpawnRefusals]:
    """The builds hosts refused at spawn, by group and feature, most first: with the
    prefilters off, what placement let through and the hosts' late checks (on real QEMU
    for libvirt hosts that ran there) caught."""
    groups = {host: group for group in host_groups(run) for host in group.hosts}
    found: dict[tuple[str, str], tuple[HostGroup, int, set[str]]] = {}
    for host, feature, builds in result.refusals():
        group = groups.get(host)
        if group is None:
            continue
        _, count, hosts = found.get((group.name, feature), (group, 0, set()))
        found[(group.name, feature)] = (group, count + builds, hosts | {host})
    return sorted((SpawnRefusals(group, feature, count, tuple(sorted(hosts)))
                   for (_, feature), (group, count, hosts) in found.items()),
                  key=lambda r: (-r.builds, r.group.name, r.feature))


def host_groups(run: RunResult) -> list[HostGroup]:
    """The run's hosts by group, in the order the cloud lists them."""
    grouped: dict[str, list[dict[str, object]]] = {}
    for host in run.hosts:
        grouped.setdefault(str(host.get("group", host.get("driver", "?"))), []).append(host)
    groups = []
    for name, hosts in grouped.items():
        driver = str(hosts[0].get("driver", "?"))
        libvirt = [h for h in hosts if h.get("driver") == "libvirt"]
        shared = [(key, str(value)) for key, value in hosts[0].items()
                  if key not in _HOST_KEYS and all(h.get(key) == value for h in hosts)]
        groups.append(HostGroup(
            name=name, driver=driver, hosts=tuple(str(h.get("name", "?")) for h in hosts),
            real=sum(1 for h in libvirt if h.get("real")),
            recorded=sum(1 for h in libvirt if not h.get("real")),
            details=tuple(shared)))
    return groups
