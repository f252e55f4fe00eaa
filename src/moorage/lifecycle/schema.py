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

# What was asked of each server, by whom, under which request id (nova's
# os-instance-actions): a row per accepted request, written in the transaction that
# accepts it (``moorage.lifecycle.actions``). Kept after the server is deleted (2.21).
# ``message``: "Error" once one of its events failed, as nova's.
instance_actions = sa.Table(
    "instance_actions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("server_uuid", sa.String(36), nullable=False),
    sa.Column("request_id", sa.String(255), nullable=False),
    sa.Column("action", sa.String(255), nullable=False),
    sa.Column("user_id", sa.String(255), nullable=True),
    sa.Column("project_id", sa.String(255), nullable=True),
    sa.Column("start_time", sa.DateTime, nullable=False),
    sa.Column("finish_time", sa.DateTime, nullable=True),
    sa.Column("message", sa.String(255), nullable=True),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    # The events' writers find their action by (server, request id), as nova's do;
    # a server's list reads its few actions from the same index.
    sa.Index("ix_instance_actions_server_uuid_request_id", "server_uuid", "request_id"),
    sqlite_autoincrement=True,
)

# The steps a conductor took for an action: when each started and finished, and how
# it ended (Success or Error, with the failure's message as ``details`` and, for an
# unexpected failure, its Python traceback); ``host``: where it ran (a compute host,
# or the conductor's for its own steps).
instance_actions_events = sa.Table(
    "instance_actions_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("action_id", sa.Integer, sa.ForeignKey("instance_actions.id"),
              nullable=False, index=True),
    sa.Column("event", sa.String(255), nullable=False),
    sa.Column("start_time", sa.DateTime, nullable=False),
    sa.Column("finish_time", sa.DateTime, nullable=True),
    sa.Column("result", sa.String(255), nullable=True),
    sa.Column("traceback", sa.Text, nullable=True),
    sa.Column("host", sa.String(255), nullable=True),
    sa.Column("details", sa.Text, nullable=True),
    sqlite_autoincrement=True,
)

# Each project's and user's live servers (status not DELETED), their vCPUs and MiB of
# RAM: what a create's quota check reads on SQLite, where triggers on ``servers`` keep
# it in the statement that changes a server (migration 0015, their one home). Empty
# on PostgreSQL, which counts the servers themselves (``lifecycle.usage``).
server_tallies = sa.Table(
    "server_tallies",
    metadata,
    sa.Column("project_id", sa.String(255), primary_key=True),
    sa.Column("user_id", sa.String(255), primary_key=True),
    sa.Column("instances", sa.Integer, nullable=False),
    sa.Column("cores", sa.Integer, nullable=False),
    sa.Column("ram", sa.Integer, nullable=False),
)

# Server groups (nova's instance_groups, os-server-groups): a policy, its rules (JSON:
# {"max_server_per_host": N} of anti-affinity from 2.64), and an owner. The row is also
# the lock the conductors' late check takes (lifecycle.server_groups.reserve).
server_groups = sa.Table(
    "server_groups",
    metadata,
    sa.Column("uuid", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("project_id", sa.String(255), nullable=False),
    sa.Column("user_id", sa.String(255), nullable=False),
    sa.Column("policy", sa.String(32), nullable=False),
    sa.Column("rules", sa.Text, nullable=False),  # JSON object
    sa.Column("created_at", sa.DateTime, nullable=False),
    # A project's groups, for its list.
    sa.Index("ix_server_groups_project_id", "project_id"),
)

# A group's members, a row each, inserted with the server. ``host``: the host a build
# reserved under the group's lock (the late check) before its spawn, which the server's
# own row says only later; a member not in BUILD is where its server row says.
server_group_members = sa.Table(
    "server_group_members",
    metadata,
    sa.Column("group_uuid", sa.String(36),
              sa.ForeignKey("server_groups.uuid", ondelete="CASCADE"), primary_key=True),
    sa.Column("server_uuid", sa.String(36), primary_key=True),
    sa.Column("host", sa.String(255), nullable=True),
    # A server's group (the server view, the conductor's read at each scheduling).
    sa.Index("ix_server_group_members_server_uuid", "server_uuid"),
)
