"""The conductor: carries out server operations the compute API has accepted."""

from moorage.conductor.manager import Conductor

__all__ = ["Conductor"]
