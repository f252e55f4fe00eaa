"""The lifecycle's SQL tables (SQLAlchemy Core), on the compute API database's metadata.

``metadata`` is defined here, below the compute API, and the API's own tables
(flavors, images, services, aggregates) are added to it by
``moorage.api.storage.schema``; one Alembic history covers them all.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

servers = sa.Table(
    "servers",
    metadata,
    sa.Column("uuid", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("project_id", sa.String(255), nullable=False),
    sa.Column("user_id", sa.String(255), nullable=False),
    sa.Column("flavor_id", sa.String(255), nullable=False),
    sa.Column("flavor", sa.Text, nullable=False),  # JSON snapshot
    # The flavor's vCPUs and MiB of RAM beside its snapshot (nova's instances.vcpus and
    # memory_mb), written with it by store.py: what the quota's count sums, from an
    # index, with no JSON read per server.
    sa.Column("vcpus", sa.Integer, nullable=False, server_default="0"),
    sa.Column("memory_mb", sa.Integer, nullable=False, server_default="0"),
    sa.Column("image_id", sa.String(36), nullable=False),
    sa.Column("image", sa.Text, nullable=False),  # JSON snapshot
    sa.Column("is_bfv", sa.Boolean, nullable=False),
    sa.Column("availability_zone", sa.String(255), nullable=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("task_state", sa.String(64), nullable=True),
    sa.Column("host", sa.String(255), nullable=True, index=True),
    sa.Column("node", sa.String(255), nullable=True),
    sa.Column("attempts", sa.Text, nullable=False),  # JSON list
    sa.Column("scheduling", sa.Text, nullable=False),  # JSON object
    sa.Column("fault", sa.Text, nullable=True),  # JSON object
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    sa.Column("launched_at", sa.DateTime, nullable=True),
    sa.Column("deleted_at", sa.DateTime, nullable=True),
    # JSON object: moorage.lifecycle.attributes.ServerAttributes.
    sa.Column("attributes", sa.Text, nullable=False, server_default="{}"),
    sa.Index("ix_servers_project_id", "project_id"),
    # A project's live servers, counted by the quota check of every create (nova's
    # counting: no usage table to drift): the count and sums read this index alone,
    # not the rows, and never the project's deleted servers.
    # (status in it too: SQLite reads the index alone only if it holds every column
    # the statement names, its WHERE's included.)
    sa.Index("ix_servers_project_live_usage", "project_id", "user_id", "vcpus",
             "memory_mb", "status", sqlite_where=sa.text("status <> 'DELETED'"),
             postgresql_where=sa.text("status <> 'DELETED'")),
    sa.Index("ix_servers_updated_at", "updated_at"),
    # A poll of what came to rest (changes-since with status=ACTIVE&status=ERROR) reads
    # only what changed; status alone (the conductor's scans) reads its prefix.
    sa.Index("ix_servers_status_updated_at", "status", "updated_at"),
    # GET /servers pages newest first (created_at, then uuid): a page is read from the
    # index, not sorted out of every server of the cloud.
    sa.Index("ix_servers_created_at_uuid", "created_at", "uuid"),
)

# A server's tags, a row each, beside their copy in servers.attributes (which the API
# shows): GET /servers filters on them (tags, tags-any, not-tags, not-tags-any) with
# an EXISTS on this table's keys, which the JSON text cannot serve. Written in the
# transaction that writes the attributes (store.insert_server, store.describe).
server_tags = sa.Table(
    "server_tags",
    metadata,
    sa.Column("server_uuid", sa.String(36), primary_key=True),
    sa.Column("tag", sa.String(60), primary_key=True),
    sa.Index("ix_server_tags_tag", "tag"),
)

migrations = sa.Table(
    "migrations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("server_uuid", sa.String(36), nullable=False, index=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("source_host", sa.String(255), nullable=False),
    sa.Column("dest_host", sa.String(255), nullable=True),
    sa.Column("status", sa.String(16), nullable=False),
    # Who asked for the move (not always the server's owner: an administrator
    # migrates); NULL for a move recorded before the API kept it.
    sa.Column("user_id", sa.String(255), nullable=True),
    sa.Column("project_id", sa.String(255), nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    # GET /os-migrations pages newest first (created_at, id) and filters on
    # updated_at (changes-since, changes-before): a page is read from the index, not
    # from a scan of every move the cloud ever made.
    sa.Index("ix_migrations_created_at_id", "created_at", "id"),
    sa.Index("ix_migrations_updated_at", "updated_at"),
    sqlite_autoincrement=True,
)

# Durable work: one row per accepted request until the conductor finishes it. The
# row is written in the transaction that records the server's new state, so an
# accepted request is never lost with the process that accepted it.
operations = sa.Table(
    "operations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("server_uuid", sa.String(36), nullable=False, index=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("arguments", sa.Text, nullable=False),  # JSON object
    # The conductor working on it and until when its claim holds; NULL: nobody yet.
    sa.Column("owner", sa.String(255), nullable=True),
    sa.Column("lease_until", sa.DateTime, nullable=True),
    # How many times another conductor took it over from one that stopped renewing.
    sa.Column("takeovers", sa.Integer, nullable=False),
    # What the owner is doing that a successor must know (the host being tried).
    sa.Column("progress", sa.Text, nullable=False),  # JSON object
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    sqlite_autoincrement=True,
)

# Guests a host may run that no server record places there (a spawn whose answer
# was lost with its conductor): the host's agent is told to destroy them at its
# next heartbeat.
cleanups = sa.Table(
    "cleanups",
    metadata,
    sa.Column("host", sa.String(255), primary_key=True),
    sa.Column("server_uuid", sa.String(36), primary_key=True),
    sa.Column("reason", sa.String(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)
