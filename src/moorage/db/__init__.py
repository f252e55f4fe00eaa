"""The database layer every service builds on: placement's storage, the compute API's
storage and the server lifecycle.

- ``engine``: URLs, engines (SQLite pragmas, PostgreSQL pools and their idle ping)
  and the connection a writer keeps between transactions.
- ``database``: ``Database``, its readers and writers (the write transaction,
  ``Transaction``, is what a service extends: placement's stamps its changes).
- ``group_commit``: SQLite writers of one process sharing a COMMIT.
- ``statements``: hot statements run the cheapest way each backend allows.
- ``clock``: the naive UTC timestamps the tables store.
- ``migration``: a service's Alembic history, applied and read.

Nothing here knows a service's tables: the package sits below every service and
imports none of them.
"""
