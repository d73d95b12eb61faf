"""The project's own import graph (docs/layout.md): no module imports itself back through others (a circle),
and no stage imports one above it. Read from the source with `ast`, every import counted wherever it stands:
inside a function (a late import does not hide a circle) and under `if __name__ == "__main__":` (a module
that hands over to the command line when run as a script imports the whole program back)."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("guards", "inference", "curation", "pages", "bench")

# The floors from the bottom up: a module imports its own floor and those below, never one above. A module's
# floor is that of the longest name below that starts its name. Within a floor modules import one another
# freely, as long as no circle closes.
FLOORS = [
    ("guards", ["guards"]),  # what the server lets in, processes that die with their job: standard library only
    ("inference", ["inference"]),  # the veterinary classifier and the captioning model
    ("sources", ["curation.sources"]),  # where pages come from
    ("scoring", ["curation.scoring"]),  # one page in, its scores out
    ("pictures", ["curation.pictures"]),  # the picture finder: pages in, pictures out
    ("manifest", ["curation.manifest"]),  # the data: schema, store, rows, history, settings, thumbnails
    ("decisions", ["curation.decisions"]),  # what is learned from the curators' decisions
    # The screens' questions and the work over the manifest: Review's cards are cut with the export's reader
    # and the jobs' words are the screens' words, while the jobs count what the screens show, so these four
    # lean on one another sideways.
    ("work", ["curation.views", "curation.captions", "curation.export", "curation.runs"]),
    ("cli", ["curation.cli"]),  # the command line over all of them
    ("curation", ["curation"]),  # the package's front door (`from curation import Manifest`), `python -m curation`
    ("components", ["pages.components"]),  # the dashboard's parts: sign-in, card grid, keys, large views, server
    ("pages", ["pages"]),  # the screens
    ("bench", ["bench"]),  # benchmarks and recipes
]

# Circles known and not broken yet (a shared constant or helper to be moved to where it belongs): none. The test
# fails when a new circle appears or one of these grows, and when one of these is gone (so the list is kept true).
KNOWN_CIRCLES: list[set[str]] = []


def _module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: pathlib.Path = ROOT) -> dict[str, pathlib.Path]:
    return {_module_name(path, root): path for package in PACKAGES for path in sorted((root / package).rglob("*.py"))}


def _imports(tree: ast.AST):
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def _imported(name: str, path: pathlib.Path, known: dict) -> set[str]:
    """The project's modules `name` imports; `from package import name` counts as the module when there is one."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module
            targets = [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            if name.startswith("bench.") and target.split(".")[0] not in PACKAGES:
                target = f"bench.{target}"  # the benchmarks import each other from their own folder
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: pathlib.Path = ROOT) -> dict[str, set[str]]:
    known = modules(root)
    return {name: _imported(name, path, known) for name, path in known.items()}


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan's, without recursion)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(group)
    return found


def floor(name: str) -> int:
    matches = [(len(prefix), number) for number, (_, prefixes) in enumerate(FLOORS) for prefix in prefixes
               if name == prefix or name.startswith(prefix + ".")]
    assert matches, f"{name} is on no floor: add it to FLOORS (and to docs/layout.md)"
    return max(matches)[1]


def test_no_module_imports_itself_back():
    found = circles(import_graph())
    unknown = [sorted(group) for group in found if group not in KNOWN_CIRCLES]
    assert not unknown, f"import circles: {unknown}"
    gone = [sorted(group) for group in KNOWN_CIRCLES if group not in found]
    assert not gone, f"circles broken since: take them off KNOWN_CIRCLES: {gone}"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{name} ({FLOORS[floor(name)][0]}) imports {target} ({FLOORS[floor(target)][0]})"
            for name, targets in sorted(graph.items()) for target in sorted(targets) if floor(target) > floor(name)]


def test_no_stage_imports_one_above_it():
    upward = upward_imports(import_graph())
    assert not upward, "imports up the stages:\n" + "\n".join(upward)


def test_the_checks_see_a_circle_and_an_upward_import():
    graph = {"curation.manifest.a": {"curation.views.b"}, "curation.views.b": {"curation.manifest.a"}}
    assert circles(graph) == [{"curation.manifest.a", "curation.views.b"}]
    assert floor("curation.manifest.a") < floor("curation.views.b") < floor("pages.components.keys")


def test_the_graph_holds_imports_in_functions_and_in_a_script_block(tmp_path):
    """A tiny tree like the one that hid a circle of 25 modules: a stage's module that hands over to the
    command line when run as a script, and the command line importing that stage late, in a function."""
    files = {
        "curation/__init__.py": "",
        "curation/sources/__init__.py": "",
        "curation/sources/paths.py": (
            "import sys\n\n\ndef check():\n    return sys.argv\n\n\n"
            "if __name__ == '__main__':\n    from curation.cli import cli\n    cli()\n"),
        "curation/cli/__init__.py": "def cli():\n    from ..sources.paths import check\n    return check()\n",
        "curation/views/__init__.py": "from ..sources import paths\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path)
    assert graph["curation.sources.paths"] == {"curation.cli"}
    assert graph["curation.cli"] == {"curation.sources.paths"}
    assert graph["curation.views"] == {"curation.sources.paths"}
    assert circles(graph) == [{"curation.sources.paths", "curation.cli"}]
    assert upward_imports(graph) == ["curation.sources.paths (sources) imports curation.cli (cli)"]
