"""Compute API storage: the SQL schema, its migrations, and one data-layer module per noun.

Nothing in here knows about HTTP; lookups that find nothing raise
``moorage.api.errors.NotFound`` naming what was asked for.
"""
