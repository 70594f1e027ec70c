"""The house rules that a reader checks by eye, checked here: no function in the package over 60 lines,
no import cycle between its modules (lazy imports inside functions included: a cycle through them
is still a knot in the design), and imports that point down the layers of docs/ARCHITECTURE.md."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "reassign_cli"
MAX_FUNCTION_LINES = 60


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = ast.parse(path.read_text(), str(path))
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str, tree: ast.Module, known: set[str]) -> set[str]:
    """The package's modules that `name` imports anywhere in its body."""
    is_package = f"{name}.__init__" not in known and any(k.startswith(name + ".") for k in known)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, is_package, node)
            # `from pkg import mod` imports the submodule; `from mod import func` the module itself
            subs = {f"{target}.{a.name}" for a in node.names} & known
            found.update(subs or {target})
    return {m for m in found if m in known and m != name}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return [*path[path.index(m) :], m]
            if m not in state and (found := visit(m)):
                return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_cycle_finder_finds_a_cycle() -> None:
    # worked by hand: a -> b -> c -> a, d outside it
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle() -> None:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, tree, known) for name, tree in modules.items()}
    assert "reassign_cli.core.model" in graph["reassign_cli.planning.plan"]  # the graph sees real imports
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_function_over_60_lines() -> None:
    long = []
    for name, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert not long, "functions over 60 lines: " + "; ".join(long)


# What each layer may import from the package (lazy imports included). A module's layer is the longest
# prefix of its name listed here. Pure layers (core, planning, the Backend protocol, spark's split) never
# reach an edge (backends' implementations, spark's engine), the sequencing, render or cli.
LAYERS = {
    "reassign_cli.errors": set(),
    "reassign_cli.core": {"core"},
    "reassign_cli.planning": {"core", "planning"},
    "reassign_cli.backends.protocol": {"core"},
    "reassign_cli.spark.split": {"core", "planning"},
    "reassign_cli.backends": {"core", "planning", "backends"},
    "reassign_cli.spark": {"core", "planning", "spark"},
    "reassign_cli.ops": {"core", "planning", "backends", "spark", "ops"},
    "reassign_cli.render": {"core", "planning", "backends.protocol", "render"},
    "reassign_cli.cli": {"core", "planning", "backends", "spark", "ops", "render", "cli", "sigint"},
    # The console script's first module: guards SIGINT (sigint) while it imports cli.
    "reassign_cli.entry": {"cli", "sigint"},
    "reassign_cli.sigint": set(),
    "reassign_cli.__main__": {"entry"},
    "reassign_cli": set(),
}


def _layer(module: str) -> str:
    return max((k for k in LAYERS if module == k or module.startswith(k + ".")), key=len)


def _allowed(module: str, target: str) -> bool:
    if target == "reassign_cli.errors" or target == "reassign_cli":
        return True
    rel = target.removeprefix("reassign_cli.")
    return any(rel == a or rel.startswith(a + ".") for a in LAYERS[_layer(module)])


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets if not _allowed(m, t))


def test_layer_rule_sees_a_wrong_arrow() -> None:
    # worked by hand: core importing an edge and planning importing ops are both wrong; ops -> core is fine
    graph = {
        "reassign_cli.core.model": {"reassign_cli.backends.zookeeper.session"},
        "reassign_cli.planning.plan": {"reassign_cli.ops.generate", "reassign_cli.core.model"},
        "reassign_cli.ops.execute": {"reassign_cli.core.model", "reassign_cli.errors"},
        "reassign_cli.spark.split": {"reassign_cli.spark.engine"},
    }
    assert _upward(graph) == [
        "reassign_cli.core.model -> reassign_cli.backends.zookeeper.session",
        "reassign_cli.planning.plan -> reassign_cli.ops.generate",
        "reassign_cli.spark.split -> reassign_cli.spark.engine",
    ]


def test_imports_point_down_the_layers() -> None:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, tree, known) for name, tree in modules.items()}
    wrong = _upward(graph)
    assert not wrong, "imports against the layers: " + "; ".join(wrong)
