"""The image service's tables, on the compute API database's metadata: the one home of
an image. The compute API's server create path, its Definitions cache and the image
admission read the same ``images`` rows (``moorage.api.storage.images``); the image
service (``moorage.image``) writes them.

``images`` keeps glance's columns (status, size, the hashes, protected, os_hidden,
soft deletion) beside the properties as one JSON object of strings; tags and members
are rows of their own, as in glance, so a list filters on them in SQL.
"""

from __future__ import annotations

import sqlalchemy as sa

from moorage.lifecycle.schema import metadata

images = sa.Table(
    "images",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=True),
    # Null until the owner says (glance's images may be created without them).
    sa.Column("disk_format", sa.String(16), nullable=True),
    sa.Column("container_format", sa.String(16), nullable=True),
    sa.Column("min_disk", sa.Integer, nullable=False),
    sa.Column("min_ram", sa.Integer, nullable=False),
    sa.Column("owner", sa.String(255), nullable=True),
    sa.Column("visibility", sa.String(16), nullable=False),
    sa.Column("properties", sa.Text, nullable=False),  # JSON object of strings
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("size", sa.BigInteger, nullable=True),
    sa.Column("virtual_size", sa.BigInteger, nullable=True),
    sa.Column("checksum", sa.String(32), nullable=True),
    sa.Column("os_hash_algo", sa.String(64), nullable=True),
    sa.Column("os_hash_value", sa.String(128), nullable=True),
    sa.Column("protected", sa.Boolean, nullable=False),
    sa.Column("os_hidden", sa.Boolean, nullable=False),
    sa.Column("deleted", sa.Boolean, nullable=False),
    sa.Column("deleted_at", sa.DateTime, nullable=True),
)

image_tags = sa.Table(
    "image_tags",
    metadata,
    sa.Column("image_id", sa.String(36), sa.ForeignKey("images.id"), primary_key=True),
    sa.Column("value", sa.String(255), primary_key=True),
)

image_members = sa.Table(
    "image_members",
    metadata,
    sa.Column("image_id", sa.String(36), sa.ForeignKey("images.id"), primary_key=True),
    sa.Column("member", sa.String(255), primary_key=True),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    sa.Index("ix_image_members_member", "member"),
)
