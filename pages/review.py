"""Review: a paged grid of thumbnails with their decision; include, exclude or clear, one page or a whole view."""

import pathlib

import streamlit as st

from curation import views
from pages import _common as common

PER_SCREEN = 40
COLUMNS = 6  # at most; the grid wraps to fewer on narrow screens
CHOICES = {"include": "Include", "auto": "Auto", "exclude": "Exclude"}
CHOICE_OF_OVERRIDE = {1: "include", None: "auto", 0: "exclude"}
OVERRIDE_OF_CHOICE = {"include": True, "auto": None, "exclude": False}
BULK, OPEN = "review_bulk", "review_open"  # session keys of the open dialogs


def main():
    st.title("Review")
    manifest = common.require_manifest()
    with manifest:
        threshold = manifest.threshold
        documents = views.documents_for_filter(manifest)
        if not documents:
            st.info("No page is scored yet: ingest an archive first.")
            common.link("pages/ingest.py", "Ingest", ":material/upload_file:")
            return
        flt, sort = filters(documents, threshold)
        counts = views.filter_counts(manifest, threshold, flt)
        total_overrides = views.override_count(manifest)
        header(counts, threshold, total_overrides)
        if counts["pages"] == 0:
            st.info("No pages match this view.")
            return
        bulk_actions(flt, counts["pages"], threshold)
        screens = -(-counts["pages"] // PER_SCREEN)
        if st.session_state.get("page", 1) > screens:  # the view shrank (a bulk action, a new filter)
            st.session_state["page"] = screens
        screen = st.pagination(screens, key="page", max_visible_pages=9, bind="query-params")
        rows = views.page_rows(manifest, threshold, flt, sort, limit=PER_SCREEN, offset=(screen - 1) * PER_SCREEN)
        thumbs = views.thumbnails(manifest, [(row["doc_id"], row["page"]) for row in rows])
    grid(rows, thumbs, {doc["id"]: doc for doc in documents})
    if OPEN in st.session_state:
        open_page(threshold, *st.session_state[OPEN])
    if screen < screens:
        st.button(f"Next {PER_SCREEN} pages", icon=":material/arrow_downward:", on_click=next_screen,
                  args=(screen,))


def next_screen(screen: int):
    st.session_state["page"] = screen + 1


def filters(documents: list[dict], threshold: float) -> tuple[views.PageFilter, str]:
    names = {0: "All documents", **{doc["id"]: pathlib.Path(doc["path"]).name for doc in documents}}
    decision = st.segmented_control(
        "Show", list(views.DECISIONS), format_func=views.DECISIONS.get, default="all", required=True,
        key="decision", bind="query-params", on_change=first_screen)
    document_col, sort_col, near_col = st.columns([3, 2, 2], vertical_alignment="bottom")
    doc_id = document_col.selectbox("Document", list(names), format_func=names.get, key="doc",
                                    bind="query-params", on_change=first_screen)
    sort = sort_col.selectbox("Sort by", list(views.SORTS), format_func=lambda s: views.SORTS[s][0], key="sort",
                              bind="query-params", on_change=first_screen)
    near = 5.0
    if decision == "near":
        near = near_col.number_input(f"Within ± σ of the cutoff ({threshold:g})", 0.5, 100.0, 5.0, step=0.5,
                                     format="%.1f", key="near", on_change=first_screen)
    return views.PageFilter(decision, doc_id or None, near), sort


def first_screen():
    st.session_state["page"] = 1


def header(counts: dict, threshold: float, total_overrides: int):
    st.markdown(
        f"**{counts['pages']:,}** pages in this view · :green[**{counts['kept']:,}** kept] · "
        f"**{counts['rejected']:,}** rejected · :violet[**{counts['overridden']:,}** overridden]"
        f" &nbsp;|&nbsp; **{total_overrides:,}** overrides in the manifest"
    )
    st.caption(f"Decisions at the saved cutoff, σ > {threshold:g} (change it on Threshold); "
               "an override wins over the cutoff and survives re-scoring.")


def bulk_actions(flt: views.PageFilter, count: int, threshold: float):
    bar = st.container(horizontal=True, vertical_alignment="center")
    bar.caption(f"Everything in this view ({count:,} pages):")
    for label, action, icon in (("Include all", "include", ":material/add_circle:"),
                                ("Exclude all", "exclude", ":material/remove_circle:"),
                                ("Clear all overrides", "auto", ":material/undo:")):
        bar.button(label, icon=icon, key=f"bulk-{action}", type="tertiary", on_click=ask, args=(BULK, action))
    # The dialog is drawn on every run while the question is open, so a rerun does not lose it.
    if BULK in st.session_state:
        confirm_bulk(flt, count, threshold, st.session_state[BULK])


def ask(key: str, value):
    st.session_state[key] = value


def close(key: str):
    st.session_state.pop(key, None)


@st.dialog("Apply to the whole view", on_dismiss=lambda: close(BULK))
def confirm_bulk(flt: views.PageFilter, count: int, threshold: float, action: str):
    verb = {"include": "Include", "exclude": "Exclude", "auto": "Clear the override of"}[action]
    st.markdown(f"**{verb} all {count:,} pages** in this view?")
    st.caption("Each page gets an override that wins over the cutoff." if action != "auto" else
               "These pages go back to the cutoff's decision.")
    left, right = st.columns(2)
    if left.button(f"{verb} {count:,} pages", type="primary", key="bulk-confirm"):
        with common.open_manifest() as manifest:
            done = views.bulk_override(manifest, threshold, flt, OVERRIDE_OF_CHOICE[action])
        close(BULK)
        st.session_state["review_notice"] = f"{verb} {done:,} pages: done."
        st.rerun()
    if right.button("Cancel", key="bulk-cancel"):
        close(BULK)
        st.rerun()


def grid(rows: list[dict], thumbs: dict, documents: dict):
    notice = st.session_state.pop("review_notice", None)
    if notice:
        st.toast(notice, icon=":material/check:")
    cells = st.grid(COLUMNS, border=True, min_column_width=230)
    for row in rows:
        with cells.cell():
            card(row, thumbs.get((row["doc_id"], row["page"])), documents.get(row["doc_id"]))


def card(row: dict, thumb: bytes | None, document: dict | None):
    doc_id, page = row["doc_id"], row["page"]
    if thumb:
        st.image(thumb, width="stretch")
    else:
        st.caption(f":red[No image: {row['error'] or 'not scored'}]")
    sigma = f"σ {row['sigma']:.1f}" if row["sigma"] is not None else "σ —"
    total = f" of {document['pages']}" if document and document["pages"] else ""
    st.caption(f"**{sigma}** · p. {page + 1}{total}  \n{pathlib.Path(row['doc']).name}")
    line = st.container(horizontal=True, vertical_alignment="center", gap="small")
    with line:
        decision_badge(row)
        st.space("stretch")
        st.button("Open", key=f"open-{doc_id}-{page}", icon=":material/open_in_full:", type="tertiary",
                  help="See the page large, drawn from its PDF", on_click=ask, args=(OPEN, (doc_id, page)))
    choice = CHOICE_OF_OVERRIDE[row["override"]]
    # The override is part of the key: when it changes elsewhere (bulk, another browser) the
    # control starts afresh from the manifest instead of keeping a stale selection.
    key = f"decide-{doc_id}-{page}-{choice}"
    st.segmented_control("Decision", list(CHOICES), format_func=CHOICES.get, default=choice, required=True,
                         key=key, label_visibility="collapsed", on_change=decided, args=(doc_id, page, key),
                         help="Include or exclude whatever the cutoff says; Auto: the cutoff decides.")


def decided(doc_id: int, page: int, key: str):
    set_override(doc_id, page, OVERRIDE_OF_CHOICE[st.session_state[key]])


def decision_badge(row: dict):
    if row["override"] is not None:
        label = "included" if row["override"] else "excluded"
        st.badge(f"{label} by you", icon=":material/person:", color="violet")
    elif row["status"] == "failed":
        st.badge("failed", icon=":material/error:", color="red")
    elif row["keep"]:
        st.badge("kept", icon=":material/check:", color="green")
    else:
        st.badge("rejected", icon=":material/close:", color="gray")


def set_override(doc_id: int, page: int, keep):
    with common.open_manifest() as manifest:
        manifest.set_override(doc_id, page, keep)
    word = {True: "Included", False: "Excluded", None: "Cleared the override of"}[keep]
    st.toast(f"{word} page {page + 1}", icon=":material/check:")


@st.dialog("Page", width="large", on_dismiss=lambda: close(OPEN))
def open_page(threshold: float, doc_id: int, page: int):
    with common.open_manifest() as manifest:
        rows = views.page_rows(manifest, threshold, views.PageFilter(doc_id=doc_id, page=page), limit=1)
    if not rows:
        st.error("This page is no longer in the manifest.")
        return
    row = rows[0]
    st.markdown(f"**{pathlib.Path(row['doc']).name}**, page {page + 1} · "
                + (f"σ {row['sigma']:.1f}" if row["sigma"] is not None else "not scored"))
    line = st.container(horizontal=True, vertical_alignment="center")
    with line:
        decision_badge(row)
        choice = CHOICE_OF_OVERRIDE[row["override"]]
        key = f"dialog-{doc_id}-{page}-{choice}"
        st.segmented_control("Decision", list(CHOICES), format_func=CHOICES.get, default=choice, required=True,
                             key=key, label_visibility="collapsed", on_change=decided, args=(doc_id, page, key))
    try:
        image = rendered(str(common.db_path()), doc_id, page, row["doc"], source_mtime(row["doc"]))
    except views.PageUnavailable as exc:
        st.error(str(exc), icon=":material/broken_image:")
        return
    st.image(image, width="stretch")
    st.caption(f"Drawn from `{row['doc']}`")


def source_mtime(path: str) -> int:
    try:
        return pathlib.Path(path).stat().st_mtime_ns
    except OSError:
        return 0


@st.cache_data(max_entries=8, show_spinner="Drawing the page…")
def rendered(db: str, doc_id: int, page: int, path: str, mtime_ns: int) -> bytes:
    """Drawing a page takes a fraction of a second; a few recent ones are kept. The path and mtime
    are part of the key, so a moved or changed file is drawn again."""
    with common.open_manifest() as manifest:
        return views.render_page(manifest, doc_id, page)


common.run_page(main)
