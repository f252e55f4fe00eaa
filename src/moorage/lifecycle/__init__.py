"""The server lifecycle: what a server is, the states it moves through, and the
durable work that moves it.

It sits below both the compute API (which records what a user asked for) and the
conductor (which carries it out), so neither imports the other's internals:

    states.py       ServerStatus, TaskState, MigrationKind, MigrationStatus (nova's names)
    records.py      ServerRecord, MigrationRecord
    schema.py       the servers, server_tags, migrations, operations and cleanups
                    tables
    store.py        reading and changing servers and migrations; ``transition`` is the
                    compare-and-set every state change goes through
    listing.py      what a server list filters and sorts on, as one SQL statement
    operations.py   durable work: an operation per accepted request, owned by one
                    conductor under a lease, taken over when its owner dies
"""
