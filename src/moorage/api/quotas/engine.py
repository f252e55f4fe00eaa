"""A project's limits, its usage, and the checks of what a request adds.

Why counting and no usage table: nova's counting driver counts the recorded things
themselves (servers, key pairs), so no usage can drift from them. Why race-free: every
check runs in the transaction that records what it admits, after
``storage.quotas.lock_project`` (a row lock on PostgreSQL; SQLite's writers take turns),
so two creates of one project never both count the same headroom.

Limits resolve as nova's: [quota]'s option, over it the quota class ``default``'s
row, over that the project's own, and for one user the user's own where set (else
the project's). -1 is unlimited.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from oslo_config import cfg
from sqlalchemy.engine import Connection

from moorage.api.quotas.resources import SERVER_RESOURCES, Resource, options
from moorage.api.storage import keypairs as keypair_store
from moorage.api.storage import quotas as stored
from moorage.lifecycle import server_groups as group_store
from moorage.lifecycle import usage as server_usage

R = Resource
UNLIMITED = -1

# A counter: (connection, project, user) -> (the project's usage, the user's part).
Counter = Callable[[Connection, str, str], tuple[int, int]]


def _key_pairs(conn: Connection, project_id: str, user_id: str) -> tuple[int, int]:
    """Key pairs belong to users: a user's count, none for the project (nova's)."""
    return 0, keypair_store.count_keypairs(conn, user_id) if user_id else 0


def _server_groups(conn: Connection, project_id: str, user_id: str) -> tuple[int, int]:
    """Server groups belong to projects: the project's count (nova counts the user's
    part too, which no default limits apart)."""
    return group_store.count_groups(conn, project_id), 0


# What counts each resource beyond a server's own: key pairs and server groups here,
# and what other parts register; a resource without a counter is in use 0 (server
# group members are counted per group, at the create that joins one: admission).
COUNTERS: dict[Resource, Counter] = {Resource.KEY_PAIRS: _key_pairs,
                                     Resource.SERVER_GROUPS: _server_groups}


def register_counter(resource: Resource, counter: Counter) -> None:
    """Count ``resource`` with ``counter`` in details, limits and checks."""
    COUNTERS[resource] = counter


def enforced(conf: cfg.ConfigOpts) -> bool:
    """Whether quotas apply at all ([quota] driver)."""
    return options(conf).enforced


@dataclass(frozen=True)
class Limits:
    """One project's limits, and one user's where the user has limits of their own
    (``user_set``: which; the others are the project's)."""

    project: Mapping[Resource, int]
    user: Mapping[Resource, int]
    user_set: frozenset[Resource]


def defaults(conf: cfg.ConfigOpts, stored_defaults: Mapping[str, int]) -> dict[Resource, int]:
    """Every resource's default: [quota]'s option, or the default class's row."""
    configured = options(conf)
    if not configured.enforced:
        return dict.fromkeys(Resource, UNLIMITED)
    return {resource: stored_defaults.get(str(resource), value)
            for resource, value in configured.defaults.items()}


def limits(conn: Connection, conf: cfg.ConfigOpts, project_id: str,
           user_id: str | None = None) -> Limits:
    """The limits of ``project_id`` (and of ``user_id`` in it): one statement."""
    if not enforced(conf):
        everything = defaults(conf, {})
        return Limits(everything, everything, frozenset())
    found = stored.read(conn, project_id, user_id)
    project = {resource: found.project.get(str(resource), value)
               for resource, value in defaults(conf, found.defaults).items()}
    user = {resource: found.user.get(str(resource), value)
            for resource, value in project.items()}
    user_set = frozenset(resource for resource in Resource if str(resource) in found.user)
    return Limits(project, user, user_set)


@dataclass(frozen=True)
class Usage:
    """What a project uses of each counted resource, and what one user of it uses."""

    project: Mapping[Resource, int]
    user: Mapping[Resource, int]


def count(conn: Connection, project_id: str, user_id: str,
          resources: Iterable[Resource] = tuple(Resource), *, per_user: bool = True) -> Usage:
    """The usage of ``resources`` (those nothing counts are 0); without ``per_user``,
    the user's part of the servers' is 0 (not counted)."""
    wanted = set(resources)
    project: dict[Resource, int] = dict.fromkeys(wanted, 0)
    user: dict[Resource, int] = dict.fromkeys(wanted, 0)
    if wanted & set(SERVER_RESOURCES):
        counted = server_usage.count(conn, project_id, user_id,
                                     resources=bool(wanted & {R.CORES, R.RAM}),
                                     per_user=per_user)
        for resource in set(SERVER_RESOURCES) & wanted:
            project[resource] = getattr(counted.project, str(resource))
            user[resource] = getattr(counted.user, str(resource))
    for resource in wanted - set(SERVER_RESOURCES):
        counter = COUNTERS.get(resource)
        if counter is not None:
            project[resource], user[resource] = counter(conn, project_id, user_id)
    return Usage(project, user)


class OverQuota(Exception):
    """A request beyond a limit: nova's message, a 403 at the API."""


def too_many(overs: list[Resource], requested: Mapping[Resource, object],
             used: Mapping[Resource, int], allowed: Mapping[Resource, int]) -> OverQuota:
    """nova's TooManyInstances, its words."""
    def joined(values: Iterable[object]) -> str:
        return ", ".join(str(value) for value in values)
    names = joined(overs)
    return OverQuota(f"Quota exceeded for {names}: Requested "
                     f"{joined(requested[r] for r in overs)}, but already used "
                     f"{joined(used[r] for r in overs)} of "
                     f"{joined(allowed[r] for r in overs)} {names}")


def _over(limit: int, used: int, delta: int) -> bool:
    return limit >= 0 and delta > 0 and used + delta > limit


def servers_limited(found: Limits) -> bool:
    """Whether any of a server's resources has a limit (else nothing is counted)."""
    return any(found.project[r] >= 0 or (r in found.user_set and found.user[r] >= 0)
               for r in SERVER_RESOURCES)


def check_boot(conn: Connection, found: Limits, project_id: str, user_id: str,
               vcpus: int, memory_mb: int, min_count: int, max_count: int) -> int:
    """How many servers (``min_count`` to ``max_count``) of ``vcpus`` and ``memory_mb``
    the project (and its user) may create now under ``found``: nova's
    check_num_instances_quota. OverQuota with nova's message when fewer than
    ``min_count``. Call it with the project locked, in the transaction that inserts
    them."""
    if not servers_limited(found):
        return max_count
    # The user's own limits count only where the user has some on servers (nova's):
    # only then is the user's part counted.
    per_user = bool(found.user_set & set(SERVER_RESOURCES))
    counted = count(conn, project_id, user_id, SERVER_RESOURCES, per_user=per_user)
    per_server = {R.INSTANCES: 1, R.CORES: vcpus, R.RAM: memory_mb}
    levels = [(found.project, counted.project)]
    if per_user:
        levels.append((found.user, counted.user))
    allowed = max_count
    for limit, used in levels:
        for resource in SERVER_RESOURCES:
            if limit[resource] >= 0 and per_server[resource] > 0:
                headroom = max(limit[resource] - used[resource], 0)
                allowed = min(allowed, headroom // per_server[resource])
    if allowed >= min_count:
        return allowed
    limit, used = next(((limit, used) for limit, used in levels
                        if any(_over(limit[r], used[r], per_server[r] * max_count)
                               for r in SERVER_RESOURCES)), levels[0])
    overs = [r for r in SERVER_RESOURCES if _over(limit[r], used[r], per_server[r] * max_count)]
    instances = str(min_count) if min_count == max_count else f"{min_count}-{max_count}"
    requested: dict[Resource, object] = {R.INSTANCES: instances, R.CORES: vcpus * max_count,
                                         R.RAM: memory_mb * max_count}
    raise too_many(overs or [R.INSTANCES], requested, used, limit)


def check_resize(conn: Connection, conf: cfg.ConfigOpts, project_id: str, user_id: str,
                 cores_delta: int, ram_delta: int) -> None:
    """A resize's growth (new flavor minus old, where it grows) within the cores and
    RAM limits: nova's _check_quota_for_upsize. OverQuota with nova's words."""
    deltas = {R.CORES: max(cores_delta, 0), R.RAM: max(ram_delta, 0)}
    if not any(deltas.values()):
        return
    found = limits(conn, conf, project_id, user_id)
    if not servers_limited(found):
        return
    counted = count(conn, project_id, user_id, (R.CORES, R.RAM))
    levels = [(found.project, counted.project)]
    if found.user_set & {R.CORES, R.RAM}:
        levels.append((found.user, counted.user))
    for limit, used in levels:
        overs = [r for r in (R.CORES, R.RAM) if _over(limit[r], used[r], deltas[r])]
        if overs:
            raise too_many(overs, deltas, used, limit)


def check_key_pairs(conn: Connection, conf: cfg.ConfigOpts, project_id: str, user_id: str,
                    owned: Callable[[], int]) -> None:
    """One more key pair for ``user_id`` (``owned``: how many they have) within the
    key_pairs limit, per user as in nova."""
    found = limits(conn, conf, project_id, user_id)
    limit = found.user[R.KEY_PAIRS]
    if limit >= 0 and owned() + 1 > limit:
        raise OverQuota("Quota exceeded, too many key pairs.")


def metadata_items_limit(conn: Connection, conf: cfg.ConfigOpts, project_id: str,
                         user_id: str | None) -> int:
    """How many metadata items a server of the project may carry (-1: any number)."""
    return limits(conn, conf, project_id, user_id).user[R.METADATA_ITEMS]


def check_metadata_items(limit: int, items: int) -> None:
    """nova's MetadataLimitExceeded."""
    if limit >= 0 and items > limit:
        raise OverQuota(f"Maximum number of metadata items exceeds {limit}")


def check_injected_files(found: Limits, files: Sequence[tuple[int, int]]) -> None:
    """A create's personality files (before 2.57; ``files``: each one's path and
    content length) within nova's injected-file limits, nova's words."""
    if not files:
        return
    count_limit = found.user[R.INJECTED_FILES]
    if count_limit >= 0 and len(files) > count_limit:
        raise OverQuota("Personality file limit exceeded")
    path_limit = found.user[R.INJECTED_FILE_PATH_BYTES]
    content_limit = found.user[R.INJECTED_FILE_CONTENT_BYTES]
    if path_limit >= 0 and max(path for path, _ in files) > path_limit:
        raise OverQuota(f"Personality file path exceeds maximum {path_limit}")
    if content_limit >= 0 and max(content for _, content in files) > content_limit:
        raise OverQuota(f"Personality file content exceeds maximum {content_limit}")


def check_deltas(conn: Connection, conf: cfg.ConfigOpts, project_id: str, user_id: str,
                 deltas: Mapping[Resource, int]) -> list[Resource]:
    """The resources ``deltas`` would take over a limit (project's or user's), by the
    registered counters; for the callers that word their own refusal (server groups:
    "Quota exceeded, too many server groups.")."""
    found = limits(conn, conf, project_id, user_id)
    counted = count(conn, project_id, user_id, deltas)
    return [r for r, delta in deltas.items()
            if _over(found.project[r], counted.project[r], delta)
            or _over(found.user[r], counted.user[r], delta)]
