"""Placement storage: the SQL schema, migrations and the transactional data layer.

Nothing in here knows about HTTP. Every write goes through ``Database.writer()``,
which stamps the providers it touched with a new global change version so that
the in-memory index of every process can catch up (see ``changes.py``).
"""
