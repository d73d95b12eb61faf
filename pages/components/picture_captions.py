"""The captions of Review's Pictures view: a picture's printed legend and model caption beside the curator's,
each copied into the caption with one click; find and replace over the captions of the view, with a preview
and its count; the legends as the view's captions; and the caption job's panel. Streamlit only: the edits
are curation.captions.edit's, which caption a picture shows is curation.captions.best's."""

from __future__ import annotations

import pathlib

import streamlit as st

from curation.captions import edit
from curation.captions.best import SOURCE_WORDS
from curation.sources.page_numbers import page_number
from pages.components import auth, card_grid, common
from pages.components.caption_job import caption_panel

UNDO_HINT = "Undo is beside \"Your last change\""
LABELS = {"legend": "Printed legend", "auto_caption": "Model's caption"}
CARD_ICONS = {"legend": "❝", "auto_caption": "⚙"}  # plain characters: a card is HTML, without Streamlit's icons
USE_ICON = ":material/input:"
LINE_CHARS = 120  # of a legend or model caption on a card; the whole text is its tooltip
ASKING = "pictures_copy_asking"  # (picture id, source): a copy that would replace a typed caption, asked first
PREVIEW = "pictures_replace_preview"  # (view, options, Changes or the error's words)
LEGENDS = "pictures_use_legends"  # the view whose legends are about to become captions
PREVIEW_ROWS = 50
MAX_FIND = 500
TOOL = "pictures_caption_tool"  # the caption tool open below the filters, if any
TOOLS = {"replace": ":material/find_replace: Find and replace", "legends": ":material/format_quote: Legends as captions",
         "model": ":material/subtitles: Captions by a model"}
SWITCHED_OFF = {"legend": "no_legend", "auto_caption": "no_auto_caption"}  # the curator's "this one is wrong"
OFF_WORDS = {"legend": ("No legend", "This legend is wrong: it is never the caption nor exported."),
             "auto_caption": ("No model caption", "This model caption is wrong: it is never the caption nor exported.")}


# -- a picture's other captions -------------------------------------------------------------------


def sources_on(rows: list[dict]) -> tuple[str, ...]:
    """The other captions any of `rows` has: every card of a screen gets a line for each (blank where it has
    none), so the cards of a row keep one height, and a screen without any stays as dense as before."""
    return tuple(source for source in edit.COPY_SOURCES if any((row[source] or "").strip() for row in rows))


def other_captions(row: dict, where: str = "dialog"):
    """The printed legend and the model's caption in the large view (text read from files, shown literally), each
    with its switch ("No legend") and a button that copies it into the curator's caption. A card's are
    `card_lines`."""
    for source in edit.COPY_SOURCES:
        text = row[source]
        off = bool(row[SWITCHED_OFF[source]])
        if not text or not text.strip():
            continue
        with st.container(horizontal=True, vertical_alignment="center", gap="xsmall",
                          key=f"picture-words-{where}-{source}-{row['id']}"):
            whole = common.escape_markdown(" ".join(text.split()))
            struck = f"~~{whole}~~" if off else whole  # switched off: struck out
            model = row["auto_caption_model"] if source == "auto_caption" else None
            by = f" ({common.escape_markdown(model)})" if model else ""
            st.caption(f"{LABELS[source]}{by}{', switched off' if off else ''}: {struck}", width="stretch")
            switch_button(row, source, off)
            copy_button(row, source, where)


def card_lines(row: dict, lines: tuple[str, ...], locked: bool) -> str:
    """The card's lines of `lines` (the printed legend, the model's caption), as HTML: one muted line each, the
    whole on hover, struck out where switched off, with the button that copies it into the caption ("Replace?"
    where it would replace a typed one); a blank line where the picture has none, so the cards keep one height."""
    html = []
    for source in lines:
        text = row[source]
        if not text or not text.strip():
            html.append(card_grid.line())
            continue
        off = bool(row[SWITCHED_OFF[source]])
        whole = " ".join(text.split())
        words = card_grid.line(card_grid.text(f"{CARD_ICONS[source]} {shortened(text)}"),
                               title=f"{LABELS[source]}{' (switched off)' if off else ''}: {whole}",
                               css="cg-line cg-struck" if off else "cg-line")
        if st.session_state.get(ASKING) == (row["id"], source):
            use = card_grid.button("replace", "Replace?", auth.LOCKED_HELP if locked else
                                   f"Replace your caption with {SOURCE_WORDS[source]}", value=source,
                                   css="cg-tool cg-ask", disabled=locked)
        else:
            typed = " (it asks first: you have typed a caption)" if row["caption"] else ""
            use = card_grid.button("copy", "⇩", auth.LOCKED_HELP if locked else
                                   f"Use {SOURCE_WORDS[source]} as your caption{typed}", value=source,
                                   disabled=locked, name=f"Use {SOURCE_WORDS[source]}")
        html.append(card_grid.row(words, use))
    return "".join(html)


def switch_button(row: dict, source: str, off: bool):
    """"No legend": the legend (or model caption) is wrong, so it is never shown as the caption nor exported,
    and clearing your caption does not bring it back; "Use it again" undoes that."""
    label, words = OFF_WORDS[source]
    st.button("Use it again" if off else label, icon=":material/undo:" if off else ":material/block:",
              key=f"picture-switch-{source}-{row['id']}", type="tertiary", on_click=switched,
              args=(row["id"], source, not off), disabled=auth.locked(),
              help=auth.help_for(f"Show and export {SOURCE_WORDS[source]} again." if off else words))


def switched(picture_id: int, source: str, off: bool):
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        (manifest.set_no_legend if source == "legend" else manifest.set_no_auto_caption)([(picture_id, off)])
        row = manifest.picture(picture_id)
    where = f"picture {row['number']} on p. {page_number(row['page'])}"
    common.notify(f"{SOURCE_WORDS[source].capitalize()} of {where} is {'switched off' if off else 'used again'} · "
                  f"{UNDO_HINT}")


def shortened(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS - 1] + "…"


def copy_button(row: dict, source: str, where: str):
    words = SOURCE_WORDS[source]
    if st.session_state.get(ASKING) == (row["id"], source):
        st.button("Replace?", key=f"picture-replace-{source}-{where}-{row['id']}", type="primary",
                  on_click=copied, args=(row["id"], source, True), disabled=auth.locked(),
                  help=auth.help_for(f"Replace your caption with {words}"))
        return
    typed = " (it asks first: you have typed a caption)" if row["caption"] else ""
    st.button("", icon=USE_ICON, key=f"picture-use-{source}-{where}-{row['id']}", type="tertiary",
              on_click=copy_clicked, args=(row["id"], source), disabled=auth.locked(),
              help=auth.help_for(f"Use {words} as your caption{typed}"))


def copy_clicked(picture_id: int, source: str):
    """Copy at once into an empty caption; ask first where a typed caption would be replaced."""
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        one = edit.Pictures(ids=(picture_id,))
        if not edit.preview_copy(manifest, source, one).count and edit.preview_copy(
                manifest, source, one, overwrite=True).count:
            st.session_state[ASKING] = (picture_id, source)
            return
    copied(picture_id, source, False)


def copied(picture_id: int, source: str, overwrite: bool):
    st.session_state.pop(ASKING, None)
    if not auth.require_curator():
        return
    try:
        with common.open_manifest() as manifest:
            done = edit.copy(manifest, source, [picture_id], overwrite=overwrite)
            row = manifest.picture(picture_id)
    except edit.CaptionEditError as exc:
        common.notify(common.escape_markdown(exc), ":material/error:")
        return
    where = f"picture {row['number']} on p. {page_number(row['page'])}"
    if done.count:
        common.notify(f"{SOURCE_WORDS[source].capitalize()} is now the caption of {where} · {UNDO_HINT}")
    else:
        common.notify(f"The caption of {where} is already {SOURCE_WORDS[source]}.", ":material/info:")


# -- the view's captions at once ------------------------------------------------------------------


def caption_tools(flt, threshold: float):
    """Find and replace and the legends as captions, on the captions of the view `flt` (a PictureFilter),
    and the caption job."""
    pictures = edit.Pictures.of_view(flt, threshold)
    view = (flt, threshold)
    # One line above the grid while none is open; the one open takes the page's width below it.
    tool = st.segmented_control("Caption tools", list(TOOLS), format_func=TOOLS.get, key=TOOL,
                                label_visibility="collapsed")
    if tool is None:
        return
    if tool == "model":  # a bordered panel of its own
        with common.open_manifest() as manifest:
            caption_panel(manifest)
        return
    with st.container(border=True, key="pictures-caption-tool"):
        (find_and_replace if tool == "replace" else legends_as_captions)(pictures, view)


def find_and_replace(pictures: edit.Pictures, view: tuple):
    st.caption("On the captions of the pictures in this view. Only your captions are written: the printed "
               "legends and the model's captions stay as they were read.")
    locked = auth.locked()  # a viewer sees the tools, and changes nothing
    with st.form("pictures-replace", border=False):
        find_col, with_col = st.columns(2)
        find = find_col.text_input("Find", key="replace_find", max_chars=MAX_FIND, disabled=locked)
        replacement = with_col.text_input("Replace with", key="replace_with", max_chars=MAX_FIND, disabled=locked,
                                          help="Empty removes what is found. With a regular expression, "
                                               "\\1 or \\g<name> put back a group.")
        options = st.container(horizontal=True)
        regex = options.checkbox("Regular expression", key="replace_regex", disabled=locked,
                                 help="Python's, e.g. `^Fig\\. \\d+\\. `")
        ignore_case = options.checkbox("Ignore case", key="replace_ignore_case", disabled=locked)
        shown = options.checkbox("Start from the shown caption", key="replace_shown", disabled=locked,
                                 help="A picture without your caption starts from the caption it shows: its "
                                      "printed legend, else the model's. The result becomes your caption.")
        if st.form_submit_button("Preview", icon=":material/preview:", disabled=locked, help=auth.help_for()):
            chosen = {"regex": regex, "ignore_case": ignore_case, "shown": shown}
            st.session_state[PREVIEW] = (view, (find, replacement, chosen), previewed(pictures, find, replacement,
                                                                                     chosen))
    held = st.session_state.get(PREVIEW)
    if held is None or held[0] != view:  # a preview belongs to the view it was made in
        st.session_state.pop(PREVIEW, None)
        return
    _, asked, changes = held
    if isinstance(changes, str):
        st.error(common.escape_markdown(changes), icon=":material/error:")
        return
    if not changes.count:
        st.info(f"No caption of the {changes.searched:,} pictures in this view changes.")
        return
    first = f"; the first {PREVIEW_ROWS}:" if changes.count > PREVIEW_ROWS else ":"
    st.markdown(f"**{counted(changes.count, 'caption')} change{'s' if changes.count == 1 else ''}** of the "
                f"{changes.searched:,} pictures in this view{first}")
    # Old and new side by side, the page's width, long captions wrapped whole (a data grid cuts them off).
    # st.table renders each cell as Markdown: every text from a file or a person goes in escaped.
    shown = common.escape_markdown
    st.table([{"Document": shown(pathlib.Path(c.doc).name), "Page": c.page, "Picture": c.number,
               "Old": shown(c.old or ""), "New": shown(c.new) if c.new else "(none)",
               "From": SOURCE_WORDS.get(c.source, "")}
              for c in changes.changes[:PREVIEW_ROWS]], hide_index=True)
    st.button(f"Apply: change {changes.count:,} captions", type="primary", icon=":material/done_all:",
              key="pictures-replace-apply", on_click=replaced, args=(pictures, *asked),
              disabled=auth.locked(), help=auth.help_for("One action: Undo takes it all back."))


def counted(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def previewed(pictures: edit.Pictures, find: str, replacement: str, options: dict):
    """The preview's changes, or why there are none (a bad pattern), in words."""
    try:
        with common.open_manifest() as manifest:
            return edit.preview(manifest, find, replacement, pictures, **options)
    except edit.CaptionEditError as exc:
        return f"Nothing to preview: {exc}."


def replaced(pictures: edit.Pictures, find: str, replacement: str, options: dict):
    st.session_state.pop(PREVIEW, None)
    if not auth.require_curator():
        return
    try:
        with common.open_manifest() as manifest:
            done = edit.apply(manifest, find, replacement, pictures, **options)
    except edit.CaptionEditError as exc:
        st.toast(common.escape_markdown(exc), icon=":material/error:")
        return
    st.toast(f"Changed {done.count:,} captions · {UNDO_HINT}", icon=":material/check:")


def legends_as_captions(pictures: edit.Pictures, view: tuple):
    overwrite = st.checkbox("Also replace the captions you typed", key="legends_overwrite",
                            disabled=auth.locked(), help=auth.help_for())
    if st.session_state.get(LEGENDS) != view:
        st.button("Use the legends as captions…", icon=":material/format_quote:", key="pictures-legends",
                  on_click=ask_legends, args=(view,), disabled=auth.locked(),
                  help=auth.help_for("Every picture of this view with a printed legend gets it as its caption; "
                                     "you see how many first."))
        return
    with common.open_manifest() as manifest:
        changes = edit.use_legends(manifest, pictures, overwrite=overwrite, dry_run=True)
        kept = 0 if overwrite else edit.use_legends(manifest, pictures, overwrite=True, dry_run=True).count \
            - changes.count
    typed = f"; {counted(kept, 'picture')} keep{'s' if kept == 1 else ''} the caption you typed" if kept else ""
    st.markdown(f"**{changes.count:,} of the {changes.searched:,} pictures** in this view get their printed "
                f"legend as caption{typed}.")
    bar = st.container(horizontal=True)
    bar.button(f"Use {changes.count:,} legends", type="primary", key="pictures-legends-confirm",
               on_click=legends_used, args=(pictures, overwrite), disabled=auth.locked() or not changes.count,
               help=auth.help_for("One action: Undo takes it all back."))
    bar.button("Cancel", key="pictures-legends-cancel", on_click=st.session_state.pop, args=(LEGENDS, None))


def ask_legends(view: tuple):
    st.session_state[LEGENDS] = view


def legends_used(pictures: edit.Pictures, overwrite: bool):
    st.session_state.pop(LEGENDS, None)
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        done = edit.use_legends(manifest, pictures, overwrite=overwrite)
    st.toast(f"Used {done.count:,} legends as captions · {UNDO_HINT}", icon=":material/check:")
