"""Review's Undo, for the Pages and the Pictures views and their keys: the person's last change (one page or
picture, or a whole view) with its Undo button, and the undo itself."""

import streamlit as st

from curation import views
from curation.manifest.history import UndoError
from pages.components import auth, common


def bar(last: dict | None, where: str = ""):
    """The person's last override or caption action, one page or a whole view, with Undo; `where` tells apart
    the one in a large view, which may be drawn while the grid's is shown behind it."""
    if last is None or not auth.can_curate():
        return
    line = st.container(horizontal=True, vertical_alignment="center", key=f"undo_bar{where}")
    line.text(f"Your last change: {common.pictured(last['description'])}", width="stretch")  # it may name a file
    line.button("Undo", icon=":material/undo:", key=f"undo-{where}{last['id']}", type="tertiary", on_click=undo,
                args=(last["id"],), help="Puts back the overrides and captions it replaced, in one step.")


def undo(action: int):
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        try:
            done, left = manifest.undo(action)
        except UndoError as exc:
            common.notify(common.escape_markdown(exc), ":material/error:")
            return
    kept = f" ({left:,} changed since stay as they are)" if left else ""
    common.notify(f"Undone: {common.escape_markdown(done['description'].removeprefix('undid '))}{kept}", ":material/undo:")


def undo_latest():
    """Undo the person's last change as it is now, as the Undo bar drawn now would (z: the large view may have
    made one since the grid and its bar were drawn)."""
    with common.open_manifest() as manifest:
        last = views.last_undoable(manifest)
    if last is not None:
        undo(last["id"])


def latest_change() -> int:
    """The manifest's latest change (see views.latest_change), for the keys' large view."""
    with common.open_manifest() as manifest:
        return views.latest_change(manifest)
