"""What the pages import, imported as soon as the server is up, before a curator's first click.

A page's first open in a fresh server paid for its imports (altair and pandas for Threshold's charts, the
export's and the views' modules, Streamlit's emoji pattern, compiled on the first label that is not ASCII: a
quarter of a second), a second or more of CPU on the click that a loaded machine makes several
(bench/bench_first_opens.py). A thread of the server imports them once, in the background, while nobody waits;
Python's import lock makes a page that needs a module being imported wait for it rather than import it twice.
The list is read from the pages' own imports, so a new page's are warmed without a word here.
"""

from __future__ import annotations

import ast
import importlib
import logging
import pathlib
import threading

PAGES = pathlib.Path(__file__).resolve().parent.parent
log = logging.getLogger(__name__)


def page_imports(folder: pathlib.Path = PAGES) -> list[str]:
    """The modules the pages in `folder` (and their components) import at their top, in order, once each, but
    the pages' own: `from a.b import c` names a.b and, where c is a module, a.b.c."""
    names: list[str] = []
    for path in sorted(folder.glob("*.py")) + sorted((folder / "components").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    # Neither the dashboard's own modules nor components (streamlit_*): importing a component registers it, a
    # Streamlit call that belongs in a script run.
    return list(dict.fromkeys(name for name in names
                              if name.split(".")[0] != "pages" and not name.startswith("streamlit_")))


def warm(names: list[str] | None = None) -> None:
    """Import `names` (default: the pages'), and compile what Streamlit compiles on a page's first icon."""
    for name in page_imports() if names is None else names:
        try:
            importlib.import_module(name)
        except ImportError:  # `from module import function`: not a module of its own
            pass
        except Exception:  # the page that imports it will say what is wrong; the server serves on
            log.exception("warming %s failed", name)
    from streamlit import string_util

    # The catalog is read and compiled on the first label that is not ASCII (Threshold's "σ only": 0.21 s of its
    # first open, profiled on a busy machine); an ASCII label returns before it.
    string_util.extract_leading_emoji("σ only")


def start() -> threading.Thread:
    thread = threading.Thread(target=warm, name="warm-up", daemon=True)
    thread.start()
    return thread
