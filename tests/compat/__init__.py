"""Compatibility helpers: running upstream placement's own checks against Moorage."""
