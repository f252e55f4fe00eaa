"""One task per operation: what a conductor does for each kind.

    base.py            Job, Clients, Task: the transitions and the side effects every
                       task shares, each checked against the operation's ownership
    spawn.py           spawning on a destination or its alternates (build and moves)
    build.py           BuildTask
    delete.py          DeleteTask
    rebuild.py         RebuildTask
    move.py            MoveTask: cold migrate, resize, evacuate
    resize_end.py      ConfirmResizeTask, RevertResizeTask
    evacuation_end.py  CompleteEvacuationTask
    power.py           PowerTask: stop, start, reboot (soft and hard)

Each task drives only the transitions its operation's rule in ``lifecycle.machine``
lists; ``manager.TASKS`` is the one map from an operation kind to its task.
"""

