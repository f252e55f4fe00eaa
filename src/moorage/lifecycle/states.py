"""Server statuses, task states and migration kinds and statuses: nova's names, defined
once as enums. They are ``StrEnum``s, so they compare equal to the strings stored in the
database and shown by the API."""

from __future__ import annotations

from enum import StrEnum


class ServerStatus(StrEnum):
    """What the API shows as ``status`` (nova's server status)."""

    BUILD = "BUILD"
    ACTIVE = "ACTIVE"
    ERROR = "ERROR"
    REBUILD = "REBUILD"
    RESIZE = "RESIZE"
    VERIFY_RESIZE = "VERIFY_RESIZE"
    REVERT_RESIZE = "REVERT_RESIZE"
    DELETED = "DELETED"


class TaskState(StrEnum):
    """What is being done to a server right now (``OS-EXT-STS:task_state``)."""

    SCHEDULING = "scheduling"
    SPAWNING = "spawning"
    DELETING = "deleting"
    REBUILDING = "rebuilding"
    REBUILD_SPAWNING = "rebuild_spawning"
    RESIZE_PREP = "resize_prep"
    RESIZE_MIGRATING = "resize_migrating"
    RESIZE_CONFIRMING = "resize_confirming"
    RESIZE_REVERTING = "resize_reverting"


class MigrationKind(StrEnum):
    """``migration_type`` of a move."""

    MIGRATION = "migration"
    RESIZE = "resize"
    EVACUATION = "evacuation"


class MigrationStatus(StrEnum):
    """Where a move is. ``DONE`` is an evacuation finished while its source host was
    down; it becomes ``COMPLETED`` once the source's agent is told to destroy the guest."""

    PRE_MIGRATING = "pre-migrating"
    MIGRATING = "migrating"
    FINISHED = "finished"
    CONFIRMED = "confirmed"
    REVERTED = "reverted"
    DONE = "done"
    COMPLETED = "completed"
    ERROR = "error"
    DELETED = "deleted"


# Nova's vm_state for each status, for OS-EXT-STS:vm_state.
VM_STATES: dict[ServerStatus, str] = {
    ServerStatus.BUILD: "building", ServerStatus.ACTIVE: "active",
    ServerStatus.ERROR: "error", ServerStatus.REBUILD: "active",
    ServerStatus.RESIZE: "active", ServerStatus.VERIFY_RESIZE: "resized",
    ServerStatus.REVERT_RESIZE: "resized", ServerStatus.DELETED: "deleted",
}

# A move holds resources on both hosts in these statuses.
IN_FLIGHT: tuple[MigrationStatus, ...] = (
    MigrationStatus.PRE_MIGRATING, MigrationStatus.MIGRATING, MigrationStatus.FINISHED)

# Statuses a server rests in: no operation of the conductor is under way.
FINAL: frozenset[ServerStatus] = frozenset({
    ServerStatus.ACTIVE, ServerStatus.ERROR, ServerStatus.VERIFY_RESIZE,
    ServerStatus.DELETED})
