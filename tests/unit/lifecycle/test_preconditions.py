"""Where a server takes metadata and tags (machine.METADATA_WRITE, TAGS_WRITE): nova's
check_instance_state on those routes, walked over every state the table reaches."""

from __future__ import annotations

import pytest

from moorage.lifecycle import machine
from moorage.lifecycle.states import VM_STATES, ServerStatus, TaskState
from tests.lifecycle_paths import paths

STATES = sorted(paths(), key=lambda state: (state[0], str(state[1])))


@pytest.mark.parametrize(("status", "task"), STATES)
def test_metadata_and_tags_follow_nova_s_vm_states(status: ServerStatus,
                                                   task: TaskState | None) -> None:
    # nova: vm_state active, paused, suspended or stopped (Moorage's: active and
    # stopped); metadata also with no task state.
    active = VM_STATES[status] in ("active", "stopped")
    assert machine.TAGS_WRITE.allows(status, task) is active
    assert machine.METADATA_WRITE.allows(status, task) is (active and task is None)


def test_the_409_says_what_they_need() -> None:
    assert machine.METADATA_WRITE.needs() == (
        "status ACTIVE or HARD_REBOOT or REBOOT or REBUILD or RESIZE or SHUTOFF and no task state")
    assert machine.TAGS_WRITE.needs() == (
        "status ACTIVE or HARD_REBOOT or REBOOT or REBUILD or RESIZE or SHUTOFF")
