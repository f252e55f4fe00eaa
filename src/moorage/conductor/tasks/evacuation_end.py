"""The end of an evacuation. An evacuated server runs on its destination while its
source host is down; the source still holds the old guest, and the migration holds
the source's resources in placement. When the source heart-beats again the compute
API records this operation, and a conductor releases the migration's hold, destroys
the guest left there (unless the server has since come back to that host) and marks
the migration completed: work with a lease and a fence, like any other, rather than
a step of the heartbeat."""

from __future__ import annotations

import logging

from moorage.conductor.tasks.base import Task
from moorage.lifecycle import store
from moorage.lifecycle.states import MigrationStatus, OperationKind

LOG = logging.getLogger(__name__)


class CompleteEvacuationTask(Task):
    kinds = (OperationKind.COMPLETE_EVACUATION,)

    def run(self) -> None:
        migration_uuid = str(self.operation.arguments["migration"])
        with self.clients.database.reader() as conn:
            migration = store.load_migration(conn, migration_uuid)
            record = store.load_server(conn, self.uuid)
        if migration is None or migration.status != MigrationStatus.DONE:
            return  # completed already
        self.release(migration.uuid)
        if record is None or record.host != migration.source_host:
            self.destroy(migration.source_host,
                         f"server {self.uuid} was evacuated from {migration.source_host}")
        self.migration("migration.completed", migration.uuid)
        LOG.info("server %s: evacuation from %s completed", self.uuid, migration.source_host)
