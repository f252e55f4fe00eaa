"""SQL tables of the compute API database (SQLAlchemy Core).

Names follow nova's where nova has the table (flavors, flavor_extra_specs, services,
aggregates, aggregate_hosts, aggregate_metadata, instances as ``servers``, migrations);
images are the image service's (``moorage.image.schema``), on the same metadata.
Key pairs (nova's ``key_pairs``) are ``keypairs``, one name per user.
The servers, migrations, operations and cleanups tables belong to the server
lifecycle (``moorage.lifecycle.schema``), on the same metadata. JSON values are
stored as Text.
"""

from __future__ import annotations

import sqlalchemy as sa

from moorage.image.schema import image_members, image_tags, images
from moorage.lifecycle.schema import cleanups, metadata, migrations, operations, servers

__all__ = ["aggregate_hosts", "aggregate_metadata", "aggregates", "catalog_state", "cleanups",
           "compute_nodes", "flavor_extra_specs", "flavor_projects", "flavors", "image_members",
           "image_tags", "images", "keypairs", "metadata", "migrations", "operations",
           "quota_classes", "quota_projects", "quotas", "servers", "services"]

def _timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    ]


flavors = sa.Table(
    "flavors",
    metadata,
    sa.Column("id", sa.String(255), primary_key=True),  # the API id (flavorid)
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("root_gb", sa.Integer, nullable=False),
    sa.Column("ephemeral_gb", sa.Integer, nullable=False),
    sa.Column("swap_mb", sa.Integer, nullable=False),
    sa.Column("is_public", sa.Boolean, nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    *_timestamps(),
)

flavor_extra_specs = sa.Table(
    "flavor_extra_specs",
    metadata,
    sa.Column("flavor_id", sa.String(255),
              sa.ForeignKey("flavors.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("value", sa.String(255), nullable=False),
)

# The projects a private flavor is shared with (nova's flavor_projects, os-flavor-access).
flavor_projects = sa.Table(
    "flavor_projects",
    metadata,
    sa.Column("flavor_id", sa.String(255),
              sa.ForeignKey("flavors.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("project_id", sa.String(255), primary_key=True),
    # A project's flavors, for its flavor list.
    sa.Index("ix_flavor_projects_project_id", "project_id"),
)

services = sa.Table(
    "services",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # What compute API 2.53 and later name the service by (nova's services.uuid).
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("host", sa.String(255), nullable=False, unique=True),
    sa.Column("binary", sa.String(255), nullable=False),
    sa.Column("driver", sa.String(64), nullable=False),
    sa.Column("nodes", sa.Text, nullable=False),  # JSON list of node names
    sa.Column("agent_url", sa.String(255), nullable=True),
    sa.Column("supported_instances", sa.Text, nullable=False),  # JSON [[arch, hv, mode]]
    # JSON {node: [trait]}: what each node's driver reports unsupported (migration 0016).
    sa.Column("refused", sa.Text, nullable=False, server_default="{}"),
    sa.Column("hypervisor_version", sa.BigInteger, nullable=True),
    sa.Column("version", sa.String(64), nullable=True),
    sa.Column("disabled", sa.Boolean, nullable=False),
    sa.Column("disabled_reason", sa.String(255), nullable=True),
    sa.Column("forced_down", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    # The last heartbeat.
    sa.Column("updated_at", sa.DateTime, nullable=False),
    # The catalog version of its last change other than a heartbeat (catalog_state).
    sa.Column("change_version", sa.BigInteger, nullable=False, index=True),
    sqlite_autoincrement=True,
)

# One row per node a compute service reports (a libvirt host has one, an ironic or vCenter
# service may have many): ``id`` is the integer a hypervisor is named by before compute
# API 2.53, as nova's compute_nodes.id is, and is never reused (AUTOINCREMENT). The node's
# uuid is its resource provider's (moorage.placement.provider_names), as nova's is, so it
# is derived, not stored. No foreign key to services: a batch migration of services on
# SQLite drops and re-creates that table, and a cascade would empty this one; deleting a
# service deletes its nodes (moorage.api.storage.services.delete_service).
compute_nodes = sa.Table(
    "compute_nodes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("service_id", sa.Integer, nullable=False),
    sa.Column("hypervisor_hostname", sa.String(255), nullable=False),
    sa.UniqueConstraint("service_id", "hypervisor_hostname"),
    sqlite_autoincrement=True,
)

# One row: versions the schedulers' in-memory catalogs compare with theirs. Every
# change of a service other than a heartbeat, and every change of an aggregate,
# bumps ``version`` in its transaction; a changed service is stamped with it;
# ``aggregates_version`` and ``reset_version`` say when aggregates changed and when
# a service was deleted (the catalog then reloads them whole).
catalog_state = sa.Table(
    "catalog_state",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("aggregates_version", sa.BigInteger, nullable=False),
    sa.Column("reset_version", sa.BigInteger, nullable=False),
    # The last change of a flavor or an image (the lookups' cache).
    sa.Column("definitions_version", sa.BigInteger, nullable=False),
)

aggregates = sa.Table(
    "aggregates",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    sa.Column("availability_zone", sa.String(255), nullable=True),
    *_timestamps(),
    sqlite_autoincrement=True,
)

aggregate_hosts = sa.Table(
    "aggregate_hosts",
    metadata,
    sa.Column("aggregate_id", sa.Integer,
              sa.ForeignKey("aggregates.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("host", sa.String(255), primary_key=True),
)

aggregate_metadata = sa.Table(
    "aggregate_metadata",
    metadata,
    sa.Column("aggregate_id", sa.Integer,
              sa.ForeignKey("aggregates.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("value", sa.String(255), nullable=False),
)

# A user's key pairs: the public key as given (or generated), its fingerprint. A
# generated private key is answered once and never stored.
keypairs = sa.Table(
    "keypairs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("user_id", sa.String(255), nullable=False),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("type", sa.String(8), nullable=False),  # ssh or x509
    sa.Column("fingerprint", sa.String(255), nullable=False),
    sa.Column("public_key", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("user_id", "name", name="uniq_keypairs0user_id0name"),
    sqlite_autoincrement=True,
)

# Limits set for a project (user_id ''), or for one of its users (os-quota-sets), one
# row per resource; what no row names is the quota class's or [quota]'s default.
quotas = sa.Table(
    "quotas",
    metadata,
    sa.Column("project_id", sa.String(255), primary_key=True),
    sa.Column("user_id", sa.String(255), primary_key=True),  # '': the whole project
    sa.Column("resource", sa.String(255), primary_key=True),
    sa.Column("hard_limit", sa.Integer, nullable=False),  # -1: unlimited
    *_timestamps(),
)

# The defaults set through os-quota-class-sets (only the class "default" counts, as in
# nova), one row per resource; over [quota]'s options.
quota_classes = sa.Table(
    "quota_classes",
    metadata,
    sa.Column("class_name", sa.String(255), primary_key=True),
    sa.Column("resource", sa.String(255), primary_key=True),
    sa.Column("hard_limit", sa.Integer, nullable=False),
    *_timestamps(),
)

# One row per project that ever created a server under a limit, made on demand: on
# PostgreSQL its row lock orders the project's quota checks with their inserts (the
# check and the insert are one transaction, and the next check waits for it to commit).
quota_projects = sa.Table(
    "quota_projects",
    metadata,
    sa.Column("project_id", sa.String(255), primary_key=True),
)
