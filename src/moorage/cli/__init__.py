"""The ``moorage`` command."""
