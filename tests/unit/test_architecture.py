"""The shape of the house: which package may import which, and no circle of files.

Every module of src/moorage is parsed with `ast`, and every import counts: at module level,
inside a function, and under `if TYPE_CHECKING:` (a type-only import is still a dependency a
reader has to hold in mind, and the next refactoring turns it into a real one).

Three facts are checked:

- no circle of files: no strongly connected component of the module graph has more than one
  module (a package's `__init__` is a module like the others, so a package that imports its own
  submodule, which imports the package back, is a circle);
- no arrow back up: the top-level packages and modules of moorage sit in the layers of
  `LAYERS`, and a module imports only from its own package or from a lower layer. Peers in one
  layer do not import each other either, so no circle of packages can hide between two
  unrelated files;
- `Any` stays at or below `ANY_CEILING`: a ratchet, lowered as the types get real.

On failure each test prints what to fix: the circle of files, or the file, line and imported
module of each arrow that runs the wrong way.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "moorage"

# The layers of moorage, bottom to top. A module may import from its own top-level package and
# from any layer below its own; never from a peer in its layer, never from above. Why this order:
LAYERS: tuple[tuple[str, ...], ...] = (
    # The root package carries only the version, which the logs and the servers report; the
    # JSON value types stand alone, for every layer's bodies and answers.
    ("moorage", "jsonvalue"),
    # The vocabulary (flavors, images, codecs) and the leaf modules: each stands alone, so
    # every layer above may take from them.
    ("model", "failpoints", "metrics", "request_context", "heap", "web", "policy",
     "internal_access", "json_schema"),
    # Option definitions read model's vocabulary; the one HTTP client and the log setup carry
    # the request's context; keystone's middleware wraps a WSGI application of web's.
    ("conf", "transport", "logs", "keystone"),
    # systemd's readiness probe speaks through transport; the credentials of outgoing
    # calls (keystoneauth1) read conf's keystoneauth options.
    ("systemd", "service_auth"),
    # How every server process starts: configuration, logging, systemd.
    ("supervision",),
    # The database layer (engine, statements, clock, migrations) under every service's storage.
    ("db",),
    # Placement knows nothing of compute: it serves providers, traits and allocations.
    ("placement",),
    # Drivers: what a hypervisor can do, as traits and inventories (model's vocabulary,
    # conf's options). Above placement, whose terms a provider tree may use; below every
    # caller: the scheduler reads their capability tables, the agents run them.
    ("virt",),
    # The scheduler asks placement and reads the drivers' capability vocabulary.
    ("scheduler",),
    # The server's state machine and its store: the scheduler's decisions are part of its
    # history, and the agents, conductor and API above all drive it.
    ("lifecycle",),
    # The compute agent: provider-tree sync, spawn, the agents' HTTP API and clients.
    ("compute",),
    # Background work that drives a server through the lifecycle by scheduler and agents.
    ("conductor",),
    # The image service (glance v2): images' rows, data and routes; the compute API
    # mounts it and lends it authentication, so it sits just below.
    ("image",),
    # The compute REST API: what users call.
    ("api",),
    # Composition: the one place that wires conductor, scheduler and agent clients together
    # (the stack), and the single process that assembles every service (embedded).
    ("stack",),
    ("embedded",),
    # The applications a WSGI server of the operator's imports: placement's and the
    # stack's, built at import.
    ("wsgi",),
    # `moorage run`: a described cloud played against the services, with its report.
    ("run",),
    # The `moorage` command drives everything; `python -m moorage` runs it.
    ("cli",),
    ("__main__",),
)

# Occurrences of the name `Any` in src, outside import statements. Lower it as types get real;
# never raise it (issue 23: at most 300).
ANY_CEILING = 157


@dataclass(frozen=True)
class Import:
    """One arrow of the graph: `importer` names `imported` at `line`."""

    importer: str
    imported: str
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} -> {self.imported}"


def modules(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package by dotted name; a package is its `__init__`. Paths
    are relative to the working directory when they can be (the repository's root)."""
    found: dict[str, Path] = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = (path.relative_to(Path.cwd())
                                  if path.is_relative_to(Path.cwd()) else path)
    return found


def _resolve(name: str, known: Mapping[str, Path]) -> str | None:
    """The module a dotted name lives in: `moorage.a.b.Name` -> `moorage.a.b`."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _imported_names(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The absolute dotted names one import statement loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    # `from package import name` runs the package's `__init__`, and `name` may be a submodule.
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def imports(known: Mapping[str, Path]) -> Iterator[Import]:
    """Every import of a moorage module by another, wherever it stands in the file."""
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = {_resolve(name, known) for name in _imported_names(node, package)
                       if name == PACKAGE or name.startswith(f"{PACKAGE}.")}
            for target in sorted(target for target in targets if target not in (None, module)):
                yield Import(module, target, path, node.lineno)


def top(module: str) -> str:
    """The top-level package or module a module belongs to (`moorage` for the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def circles(graph: Mapping[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(tuple(sorted(component)))
    return found


def layer_of() -> dict[str, int]:
    return {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def circles_found(arrows: Sequence[Import]) -> list[str]:
    """Each circle of files, and the imports that close it."""
    graph: dict[str, set[str]] = {}
    for arrow in arrows:
        graph.setdefault(arrow.importer, set()).add(arrow.imported)
    lines = []
    for circle in circles(graph):
        lines.append("circle: " + ", ".join(circle))
        lines += [f"    {arrow}" for arrow in arrows
                  if arrow.importer in circle and arrow.imported in circle]
    return lines


def arrows_back_up(arrows: Iterable[Import]) -> list[str]:
    """Each import from a package to one in its layer or above."""
    layers = layer_of()
    wrong = []
    for arrow in arrows:
        source, target = top(arrow.importer), top(arrow.imported)
        if source == target:
            continue
        if layers.get(target, len(LAYERS)) >= layers.get(source, len(LAYERS)):
            wrong.append(f"{arrow}  ({source} may not import {target})")
    return wrong


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [("a", "b", "c")]


def test_a_small_house_with_a_circle_and_an_arrow_back_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks on a tree made for them: an import inside a function that runs back
    up, and a circle closed by a type-only import, each named by file and line."""
    files = {
        "__init__.py": "",
        "conf/__init__.py": "",
        "conf/options.py": "def load() -> None:\n    from moorage.virt.driver import Driver\n",
        "virt/__init__.py": "",
        "virt/driver.py": ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                           "    from moorage.virt import helper\n"),
        "virt/helper.py": "from .driver import Driver\n",
    }
    for name, text in files.items():
        (tmp_path / PACKAGE / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / PACKAGE / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    arrows = list(imports(modules(tmp_path)))
    assert arrows_back_up(arrows) == [
        "moorage/conf/options.py:2: moorage.conf.options -> moorage.virt.driver"
        "  (conf may not import virt)"]
    assert circles_found(arrows) == [
        "circle: moorage.virt.driver, moorage.virt.helper",
        "    moorage/virt/driver.py:4: moorage.virt.driver -> moorage.virt.helper",
        "    moorage/virt/helper.py:1: moorage.virt.helper -> moorage.virt.driver"]


def test_no_circle_of_files() -> None:
    found = circles_found(list(imports(modules())))
    assert not found, "\n".join(found)


def test_every_package_has_a_layer() -> None:
    layers = layer_of()
    missing = sorted({top(module) for module in modules()} - set(layers))
    assert not missing, f"place these in LAYERS of {Path(__file__).name}: {missing}"


def test_no_arrow_back_up() -> None:
    wrong = arrows_back_up(imports(modules()))
    assert not wrong, "arrows back up or across a layer:\n" + "\n".join(wrong)


def count_any(source: str) -> int:
    """Occurrences of the name `Any` in code, outside import statements (not in comments)."""
    in_imports: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            in_imports.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return sum(1 for token in tokens if token.type == tokenize.NAME and token.string == "Any"
               and token.start[0] not in in_imports)


def test_count_any_skips_imports() -> None:
    source = "from typing import (\n    Any,\n)\nx: Any = 1  # Any\ny: dict[str, Any] = {}\n"
    assert count_any(source) == 2


def test_any_stays_below_its_ceiling() -> None:
    counts = {path: count_any(path.read_text()) for path in modules().values()}
    total = sum(counts.values())
    worst = sorted(counts.items(), key=lambda item: -item[1])[:10]
    most = "\n".join(f"    {count:3} {path}" for path, count in worst)
    assert total <= ANY_CEILING, f"{total} Any in src, ceiling {ANY_CEILING}; most in:\n{most}"
