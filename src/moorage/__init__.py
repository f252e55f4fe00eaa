"""Moorage: places instances on the hosts of a heterogeneous cloud that can really run them."""

__version__ = "0.1.0"
