"""Server statuses, task states, operation kinds and migration kinds and statuses:
nova's names, defined once as enums. They are ``StrEnum``s, so they compare equal to
the strings stored in the database and shown by the API.

Which of them a server moves between, and who moves it, is ``machine.py``'s table."""

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
    SHUTOFF = "SHUTOFF"
    REBOOT = "REBOOT"
    HARD_REBOOT = "HARD_REBOOT"
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
    POWERING_OFF = "powering-off"
    POWERING_ON = "powering-on"
    REBOOTING = "rebooting"
    REBOOT_STARTED = "reboot_started"
    REBOOTING_HARD = "rebooting_hard"
    REBOOT_STARTED_HARD = "reboot_started_hard"


class OperationKind(StrEnum):
    """What an operation (one accepted request, carried out by a conductor) does."""

    BUILD = "build"
    DELETE = "delete"
    REBUILD = "rebuild"
    MIGRATE = "migrate"
    RESIZE = "resize"
    CONFIRM_RESIZE = "confirmResize"
    REVERT_RESIZE = "revertResize"
    EVACUATE = "evacuate"
    # The end of an evacuation, once its source host is back: the migration's hold on
    # the source released and the guest left there destroyed.
    COMPLETE_EVACUATION = "completeEvacuation"
    # The power actions: the guest stopped, started, or rebooted (soft or hard, the
    # operation's argument) on its host.
    STOP = "stop"
    START = "start"
    REBOOT = "reboot"


class ApiAction(StrEnum):
    """What the compute API does to a server by itself, with no operation for a
    conductor (nova's instance action names): the lock, and an admin's reset."""

    LOCK = "lock"
    UNLOCK = "unlock"
    RESET_STATE = "resetState"


class MigrationKind(StrEnum):
    """``migration_type`` of a move."""

    MIGRATION = "migration"
    RESIZE = "resize"
    EVACUATION = "evacuation"


class MigrationStatus(StrEnum):
    """Where a move is. ``DONE`` is an evacuation finished while its source host was
    down; it becomes ``COMPLETED`` once the source is back and the guest left there
    is destroyed."""

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
    ServerStatus.SHUTOFF: "stopped", ServerStatus.REBOOT: "active",
    ServerStatus.HARD_REBOOT: "active",
}

# nova's power_state: 1 (running) while a server's guest runs, 4 (shutdown) while it
# is stopped, 0 (no state) before it runs and once it is gone. Shown by the API and
# filtered and sorted on by its lists.
RUNNING, SHUTDOWN, NOSTATE = 1, 4, 0
GUEST_RUNS: frozenset[ServerStatus] = frozenset({
    ServerStatus.ACTIVE, ServerStatus.RESIZE, ServerStatus.VERIFY_RESIZE,
    ServerStatus.REVERT_RESIZE, ServerStatus.REBOOT, ServerStatus.HARD_REBOOT})
GUEST_STOPPED: frozenset[ServerStatus] = frozenset({ServerStatus.SHUTOFF})


def power_state(status: ServerStatus) -> int:
    if status in GUEST_RUNS:
        return RUNNING
    return SHUTDOWN if status in GUEST_STOPPED else NOSTATE


# A move holds resources on both hosts in these statuses.
IN_FLIGHT: tuple[MigrationStatus, ...] = (
    MigrationStatus.PRE_MIGRATING, MigrationStatus.MIGRATING, MigrationStatus.FINISHED)
