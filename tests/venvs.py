"""Where the throwaway venvs of the real components live (tools/*.sh make them): the
one place that reads their environment variable or falls back to the cache, and that
refuses, naming how to make it, an executable a venv lacks."""

from __future__ import annotations

import os
from pathlib import Path


def venv_path(variable: str, default_name: str) -> Path:
    """``$variable``, else ``$XDG_CACHE_HOME`` (or ``~/.cache``)``/moorage/default_name``."""
    configured = os.environ.get(variable)
    if configured:
        return Path(configured)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "moorage" / default_name


def executable(venv: Path, name: str, missing: type[Exception], how_to_create: str) -> Path:
    """``venv``'s ``bin/name``; ``missing`` saying how to create the venv when absent."""
    path = venv / "bin" / name
    if not os.access(path, os.X_OK):
        raise missing(f"{path} is missing. {how_to_create}")
    return path
