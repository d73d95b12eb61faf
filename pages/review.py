"""Review: a paged grid of thumbnails with their decision; include, exclude or clear, caption, one page or a
whole view; the model learned from the overrides, where it disagrees, and the near-duplicate plates."""

import dataclasses
import functools
import math
import os
import pathlib

import streamlit as st

from curation import views
from curation.decisions import keyboard
from curation.manifest.caption_limit import CAPTION_CHARS
from curation.runs import jobs
from curation.sources.page_numbers import page_number
from curation.views import bulk
from pages.components import auth, bulk_job, card_grid, common, pictures_view
from pages.components import keys as hotkeys
from pages.components import undo as undo_

PER_SCREEN = 40
COLUMNS = 6  # at most; the grid wraps to fewer on narrow screens
CARD_WIDTH = 170  # px at least: 5 cards a row at 1440 px beside the sidebar, 6 without it
CHOICES = {"include": "Include", "auto": "Auto", "exclude": "Exclude"}
CARD_CONTROL_HELP = "Plus: include whatever the rule says; A: auto, the rule decides; minus: exclude."
CHOICE_OF_OVERRIDE = {1: "include", None: "auto", 0: "exclude"}
OVERRIDE_OF_CHOICE = {"include": True, "auto": None, "exclude": False}
BULK_OF_CHOICE = {"include": "include", "auto": "clear", "exclude": "exclude"}
BULK, OPEN, CAPTION, USE_MODEL = "review_bulk", "review_open", "review_caption", "review_use_model"  # open dialogs
NOTICE, LEARNED, LEARNING = "review_notice", "review_learned", "review_learning"
LEARN_POLL_SECONDS = 1.0
MAX_CAPTION = CAPTION_CHARS  # the bound the manifest holds every caption to
NO_THUMBNAIL_WORDS = "No thumbnail: none is kept (see Ingest) and the PDF is not at hand to draw one."
CAPTION_HELP = "Saved when you press Enter or leave the box; the export puts it where its template says {caption}."


VIEWS = {"pages": "Pages", "pictures": "Pictures"}


# At 1440 x 900 the first screen shows the first row of cards: less room above the title, and the controls
# packed (title and view on one line, the keys in one line, the learned model folded away).
COMPACT_STYLE = "<style>.stMainBlockContainer { padding-top: 2.5rem; }</style>"


def main():
    st.html(COMPACT_STYLE)
    title_row = st.container(horizontal=True, vertical_alignment="center", gap="large")
    title_row.title("Review", width="content")
    view = title_row.segmented_control("View", list(VIEWS), format_func=VIEWS.get, default="pages", required=True,
                                       key="view", bind="query-params", label_visibility="collapsed")
    if view == "pictures":
        pictures_view.show()
        return
    manifest = common.require_manifest()
    with manifest:
        threshold, rule = manifest.threshold, manifest.rule
        rule_words = views.rule_summary(rule, threshold, manifest.picture_area_min)
        documents = views.documents_for_filter(manifest)
        if not documents:
            st.info("No page is scored yet: ingest an archive first.")
            common.link("pages/ingest.py", "Ingest", ":material/upload_file:")
            return
        flt, sort, outline = filters(manifest, documents, rule, threshold)
        counts = views.filter_counts(manifest, threshold, flt)
        total_overrides = views.override_count(manifest)
        header(counts, rule_words, total_overrides)
        model = views.model_state(manifest)
        model_panel(model, rule)
        if counts["pages"] == 0:
            nothing_to_show(flt, model)
            return
        bulk_actions(flt, counts, threshold)
        bulk_job.progress()
        last = views.last_undoable(manifest)
        undo_.bar(last)
        screens = -(-counts["pages"] // PER_SCREEN)
        if st.session_state.get("page", 1) > screens:  # the view shrank (a bulk action, a new filter)
            st.session_state["page"] = screens
        screen = st.pagination(screens, key="page", max_visible_pages=9, bind="query-params")
        rows = views.page_rows(manifest, threshold, flt, sort, limit=PER_SCREEN, offset=(screen - 1) * PER_SCREEN,
                               total=counts["pages"])
        keys = [(row["doc_id"], row["page"]) for row in rows]
        thumbs = views.thumbnails(manifest, keys, draw_missing=True)
        if outline:
            boxes = views.pictures_for(manifest, keys)
            widths = {key: row["width"] for key, row in zip(keys, rows)}
            thumbs = {key: views.outline_pictures(thumb, boxes.get(key), widths.get(key)) for key, thumb in thumbs.items()}
        captions = views.captions_for(manifest, keys)
        changes = views.page_changes(manifest, keys)
    if flt.decision == "duplicates":
        st.caption("Pages whose pictures look alike (a perceptual hash), group by group: the same plate reprinted "
                   "across issues. The export keeps one per group by default.")
    keyboard_review(keys, screen, counts["pages"], lambda opened: open_page(threshold, *opened, outline=outline))
    grid(rows, thumbs, captions, {doc["id"]: doc for doc in documents}, changes)
    if screen < screens:
        st.button(f"Next {PER_SCREEN} pages", icon=":material/arrow_downward:", on_click=next_screen,
                  args=(screen,))


def next_screen(screen: int):
    st.session_state["page"] = screen + 1


# -- filters and header -----------------------------------------------------------------------


def filters(manifest, documents: list[dict], rule: str, threshold: float) -> tuple[views.PageFilter, str, bool]:
    names = {0: "All documents", **{doc["id"]: common.pictured(pathlib.Path(doc["path"]).name) for doc in documents}}
    decision = st.segmented_control(
        "Show", list(views.DECISIONS), format_func=views.DECISIONS.get, default="all", required=True,
        key="decision", bind="query-params", on_change=first_screen, label_visibility="collapsed")
    document_col, sort_col, near_col, outline_col = st.columns([3, 2, 2, 2], vertical_alignment="bottom")
    doc_id = document_col.selectbox("Document", list(names), format_func=names.get, key="doc",
                                    bind="query-params", on_change=first_screen)
    sort = sort_col.selectbox("Sort by", list(views.SORTS), format_func=lambda s: views.SORTS[s][0], key="sort",
                              bind="query-params", on_change=first_screen,
                              help="Near-duplicates are always shown group by group, sorted this way within a group.")
    measure = views.near_measure(manifest, rule) if decision == "near" else "sigma"
    near = 5.0
    if decision == "near" and measure == "sigma":
        near = near_col.number_input(f"Within ± σ of the cutoff ({threshold:g})", 0.5, 100.0, 5.0, step=0.5,
                                     format="%.1f", key="near", on_change=first_screen)
    elif decision == "near":
        cutoff = views.square_inches(manifest.picture_area_min)
        near = near_col.number_input(f"Within × of the picture cutoff ({cutoff})", 1.1, 100.0, 2.0,
                                     step=0.5, format="%.1f", key="near_share", on_change=first_screen,
                                     help="2 shows pages whose largest picture is from half to twice the cutoff.")
    outline = outline_col.toggle("Outline the pictures", value=True, key="outline",
                                 help="Draws a box around every picture the page analysis found: what the picture "
                                      "rule measures and what `--crop picture` exports.")
    return views.PageFilter(decision, doc_id or None, near, near_on=measure), sort, outline


def first_screen():
    st.session_state["page"] = 1


def header(counts: dict, rule_words: str, total_overrides: int):
    st.markdown(
        f"**{counts['pages']:,}** pages in this view · :green[**{counts['kept']:,}** kept] · "
        f"**{counts['rejected']:,}** rejected · :violet[**{counts['overridden']:,}** overridden]"
        f" &nbsp;|&nbsp; **{total_overrides:,}** overrides in the manifest",
        help=f"Decisions by the saved rule, {rule_words} (change it on Threshold); an override wins over the rule "
             "and survives re-scoring. Model disagrees: pages you have not decided where the model learned from "
             "your overrides and the rule differ. Near-duplicates: the same picture on several pages, group by "
             "group.")


def nothing_to_show(flt: views.PageFilter, model: views.ModelState):
    if flt.decision == "duplicates":
        st.info("No near-duplicates here: no two pictures look alike. Groups are found after every ingest, among "
                "pages with a picture.", icon=":material/content_copy:")
    elif flt.decision == "disagrees" and not model.suggestions:
        st.info("Nothing is learned yet: press **Learn from my overrides** above.", icon=":material/psychology:")
    elif flt.decision == "disagrees":
        st.info("The model agrees with the rule on every page you have not decided.", icon=":material/check:")
    else:
        st.info("No pages match this view.")


# -- the learned model ------------------------------------------------------------------------


def model_panel(model: views.ModelState, rule: str):
    compared = "picture rule" if views.base_rule(rule) == "picture" else "σ-only rule"
    if model.suggestions:
        status = (f"**Learned model** · from {model.learned_from:,} overrides · keeps {model.kept:,} of "
                  f"{model.suggestions:,} pages · disagrees with the {compared} on **{model.disagrees:,}** "
                  "page(s) you have not decided.")
        if model.stale:
            status += f" :orange[You have {model.labels:,} overrides now: learn again to use them all.]"
        if rule == "model":
            status += " **Its suggestions are the decisions.**"
    else:
        blocker = views.learn_blocker(model.included, model.excluded)
        status = ("**Learned model** · none yet. "
                  + (blocker or f"You have {model.labels:,} overrides, enough to learn from."))
    folded = ("none yet" if not model.suggestions else
              f"disagrees with the {compared} on {model.disagrees:,} page(s)" + (" · in use" if rule == "model" else ""))
    with st.expander(f"Learned model · {folded}", icon=":material/psychology:", key="model_panel",
                     expanded=st.session_state.get(LEARNING, False) or rule == "model"):
        bar = st.container(horizontal=True, vertical_alignment="center")
        bar.markdown(status, width="stretch")
        learn = bar.button("Learn from my overrides", icon=":material/model_training:", key="learn",
                           disabled=auth.locked() or st.session_state.get(LEARNING, False),
                           help=auth.help_for("Fit a small model on your includes and excludes and show its "
                                              "suggestion on every page."))
        if rule == "model":
            bar.button("Stop using the model", icon=":material/undo:", key="stop-model", on_click=stop_model,
                       disabled=auth.locked(), help=auth.help_for("Decisions follow the rule used before again."))
        elif model.suggestions:
            bar.button("Let the model decide", icon=":material/psychology:", key="use-model", on_click=ask,
                       args=(USE_MODEL, True), disabled=auth.locked(),
                       help=auth.help_for("Make the model's suggestions the decisions (the rule 'Learned from "
                                          "overrides')."))
    if learn and auth.require_curator():
        start_learning(model)
    learning_progress()
    outcome = st.session_state.pop(LEARNED, None)
    if outcome is not None:
        (st.success if outcome.learned else st.warning)(outcome.message, icon=":material/psychology:")
    if USE_MODEL in st.session_state:
        confirm_use_model()


def start_learning(model: views.ModelState):
    """Learn in a job of its own (`python -m curation learn`): the page returns at once and follows it. Too few
    overrides with nothing learned yet are said at once; with old suggestions the job clears them."""
    blocker = views.learn_blocker(model.included, model.excluded)
    if blocker and not model.suggestions:
        st.session_state[LEARNED] = views.LearnOutcome(False, blocker, model.labels)
        return
    with common.open_manifest() as manifest:
        if manifest.running_job(views.LEARN_JOB) is not None:
            return  # another browser started it: this page follows that one
    db = pathlib.Path(os.path.abspath(common.db_path()))
    st.session_state[LEARNING] = jobs.launch(db, views.LEARN_JOB).pid  # not waited for: it registers itself


def learning_progress():
    """The learn job's progress while it runs, refreshing itself; when it ends, the page runs again with
    what it learned. Until the job's process has registered, it says it is starting."""
    with common.open_manifest() as manifest:
        job = manifest.running_job(views.LEARN_JOB)
    if job is not None and not st.session_state.get(LEARNING):
        st.session_state[LEARNING] = job["pid"]
    if not st.session_state.get(LEARNING):
        return

    @st.fragment(run_every=LEARN_POLL_SECONDS)
    def progress():
        pid = st.session_state.get(LEARNING)
        with common.open_manifest() as manifest:
            job = manifest.latest_job(views.LEARN_JOB)
        if job is not None and job["pid"] == pid and job["status"] != "running":
            st.session_state.pop(LEARNING, None)  # it ended: the panel, tiles and counts follow it
            st.session_state[LEARNED] = views.LearnOutcome(job["status"] == "done", job["message"] or
                                                           "Learning ended without a word.", 0)
            st.rerun()
        if job is not None and job["pid"] == pid:
            done = views.job_progress(job)
            st.progress(done["fraction"], text=f"Learning… {done['done']} % · {common.escape_markdown(job['message'] or 'starting')}")
        elif common.process_alive(pid):
            st.progress(0.0, text="Learning… starting")
        else:
            st.session_state.pop(LEARNING, None)
            st.error(f"Learning ended before it began. Its log is in {common.code_span(common.db_path().parent / 'logs')}.")

    progress()


def stop_model():
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        rule = views.stop_using_model(manifest)
    st.toast(f"Decisions follow the {views.RULE_LABELS[rule]} again.", icon=":material/check:")


@st.dialog("Let the model decide", on_dismiss=lambda: close(USE_MODEL))
def confirm_use_model():
    with common.open_manifest() as manifest:
        figures = views.figures(manifest, manifest.threshold, manifest.threshold, rule="model")
        rule = manifest.rule
    st.markdown(f"Make the model's suggestions the decisions? Kept pages go from **{figures['kept_saved']:,}** "
                f"to **{figures['kept']:,}**.")
    st.caption(f"Every page you have not overruled takes the model's suggestion instead of the "
               f"{views.RULE_LABELS[rule]}'s decision; pages without a suggestion follow the picture rule. Your "
               "overrides stay. Switch back here or on Threshold at any time.")

    def use_model(manifest) -> str:
        views.use_model(manifest)
        return "The model's suggestions are the decisions now."

    common.confirm_buttons("Let the model decide", "use-model", USE_MODEL, NOTICE, use_model)


# -- bulk actions -----------------------------------------------------------------------------


def bulk_actions(flt: views.PageFilter, counts: dict, threshold: float):
    count = counts["pages"]
    bar = st.container(horizontal=True, vertical_alignment="center")
    bar.caption(f"Everything in this view ({count:,} pages):")
    for label, action, icon in (("Include all", "include", ":material/add_circle:"),
                                ("Exclude all", "exclude", ":material/remove_circle:"),
                                ("Clear all overrides", "auto", ":material/undo:")):
        bar.button(label, icon=icon, key=f"bulk-{action}", type="tertiary", on_click=ask, args=(BULK, action),
                   disabled=auth.locked(), help=auth.help_for())
    bar.button("Caption all", icon=":material/edit_note:", key="bulk-caption", type="tertiary", on_click=ask,
               args=(CAPTION, True), disabled=auth.locked(), help=auth.help_for())
    # The dialog is drawn on every run while the question is open, so a rerun does not lose it.
    if BULK in st.session_state:
        confirm_bulk(flt, counts, threshold, st.session_state[BULK])
    elif CAPTION in st.session_state:
        confirm_captions(flt, threshold)


def ask(key: str, value):
    st.session_state[key] = value


def close(key: str):
    st.session_state.pop(key, None)


@st.dialog("Apply to the whole view", on_dismiss=lambda: close(BULK))
def confirm_bulk(flt: views.PageFilter, counts: dict, threshold: float, action: str):
    count = counts["pages"]
    verb = {"include": "Include", "exclude": "Exclude", "auto": "Clear the override of"}[action]
    st.markdown(f"**{verb} all {count:,} pages** in this view?")
    st.markdown(views.bulk_override_effect(counts, OVERRIDE_OF_CHOICE[action]))  # exactly what it changes

    def apply(manifest) -> str:
        doing = bulk.Bulk(view="pages", do=BULK_OF_CHOICE[action], filter=dataclasses.asdict(flt), threshold=threshold)
        return bulk_job.apply(manifest, doing, count, f"{verb} {{done:,}} pages: done.")

    common.confirm_buttons(f"{verb} {count:,} pages", "bulk", BULK, NOTICE, apply)


@st.dialog("Caption the whole view", on_dismiss=lambda: close(CAPTION))
def confirm_captions(flt: views.PageFilter, threshold: float):
    if CAPTION not in st.session_state:  # answered (finish_captions): the dialog's own rerun runs the page
        st.rerun()
    with common.open_manifest() as manifest:
        counts = views.caption_counts(manifest, threshold, flt)
    text = (st.text_area("Caption", key="bulk-caption-text", max_chars=MAX_CAPTION,
                         placeholder="e.g. a lady in a promenade dress, full length",
                         help="The export puts it where its template says {caption}.") or "").strip()
    overwrite = False
    if counts["captioned"]:  # a typed caption is never overwritten unless asked
        overwrite = st.checkbox(f"Also overwrite the {counts['captioned']:,} captions already written",
                                key="bulk-caption-overwrite")
    count, effect = views.bulk_caption_effect(counts["pages"], counts["captioned"], overwrite)
    if text:
        st.markdown(f"**Write this caption on {count:,} of the {counts['pages']:,} pages** in this view? {effect}")
    else:
        st.caption("Type the caption for every page in this view." +
                   (f" Or remove the captions of the {counts['captioned']:,} pages that have one."
                    if counts["captioned"] else ""))
    left, middle, right = st.columns(3)
    # Callbacks: the answer is written before the page runs again, once, without the dialog.
    left.button(f"Caption {count:,} pages", type="primary", key="bulk-caption-confirm", disabled=not text or count == 0,
                on_click=finish_captions, args=(flt, threshold, False, counts["pages"], "Captioned {done:,} pages."))
    if counts["captioned"] and not text:
        middle.button(f"Remove {counts['captioned']:,} captions", key="bulk-caption-remove", on_click=finish_captions,
                      args=(flt, threshold, True, counts["pages"],
                            f"Removed the captions of {counts['captioned']:,} pages."))
    right.button("Cancel", key="bulk-caption-cancel", on_click=close, args=(CAPTION,))


def finish_captions(flt: views.PageFilter, threshold: float, remove: bool, count: int, notice: str):
    """Set the caption typed in the dialog on the view's `count` pages (or, `remove`, take their captions
    away), then close the dialog with `notice` (or, on a large view, what its job does)."""
    text = None if remove else (st.session_state.get("bulk-caption-text") or "").strip()
    if not (remove or text) or not auth.require_curator():  # the text was cleared as the button was clicked
        return
    doing = bulk.Bulk(view="pages", do="caption", filter=dataclasses.asdict(flt), threshold=threshold, text=text,
                      replace=remove or bool(st.session_state.get("bulk-caption-overwrite")))
    with common.open_manifest() as manifest:
        said = bulk_job.apply(manifest, doing, count, notice)
    close(CAPTION)
    st.session_state[NOTICE] = said


# -- the grid ---------------------------------------------------------------------------------

KEYBOARD = "review-pages"


def card_key(item: tuple[int, int]) -> str:
    return f"review-card-{item[0]}-{item[1]}"


def keyboard_review(items: list[tuple[int, int]], screen: int, total: int, large_view):
    """The keys act on the focused card, or on the page in the large view (see curation.decisions.keyboard),
    which `large_view((doc_id, page))` draws."""
    hotkeys.review_grid(KEYBOARD, items, screen=screen, screen_key="page", card_key=card_key,
                        grid=keyboard.Grid(total, PER_SCREEN, COLUMNS), opened_key=OPEN, large_view=large_view,
                        paused=any(key in st.session_state for key in (BULK, CAPTION, USE_MODEL)),
                        actions=hotkeys.Actions(decide=decide_by_key, open=functools.partial(ask, OPEN),
                                                close=functools.partial(close, OPEN),
                                                undo=undo_.undo_latest if auth.can_curate() else None,
                                                version=undo_.latest_change))


def decide_by_key(item: tuple[int, int], keep: bool | None):
    if auth.require_curator():
        set_override(*item, keep)


def grid(rows: list[dict], thumbs: dict, captions: dict, documents: dict, changes: dict):
    """The screen's cards, one element (pages/components/card_grid.py): what the person does comes back as `on_card`."""
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        st.toast(notice, icon=":material/check:")
    locked = auth.locked()  # once a screen: each asks the server's secrets
    cards = []
    for row in rows:
        key = (row["doc_id"], row["page"])
        cards.append(card_grid.Card(f"{key[0]}-{key[1]}", card_key(key), card(
            row, thumbs.get(key), captions.get(key), documents.get(row["doc_id"]), changes.get(key), locked)))
    card_grid.show(KEYBOARD, cards, min_width=CARD_WIDTH, columns=COLUMNS,
                   on_event=functools.partial(on_card, {f"{row['doc_id']}-{row['page']}": row for row in rows}))


def card(row: dict, thumb: bytes | None, caption: str | None, document: dict | None, change: str | None = None,
         locked: bool = False) -> str:
    """A page's card, as HTML (every word escaped): the thumbnail, its words and badges, the decision with Open,
    the caption."""
    doc_id, page = row["doc_id"], row["page"]
    if thumb:
        shown = card_grid.image(card_grid.media_url(thumb, f"page-{doc_id}-{page}"), f"page {page_number(page)}")
    elif row["status"] == "ok":
        shown = card_grid.note(NO_THUMBNAIL_WORDS)
    else:
        shown = card_grid.note(f"No image: {row['error'] or 'not scored'}", css="cg-error")
    controls = card_grid.row(
        card_grid.choices(CHOICE_OF_OVERRIDE[row["override"]], auth.LOCKED_HELP if locked else CARD_CONTROL_HELP,
                          disabled=locked),
        card_grid.button("open", "⤢", "Open: see the page large, drawn from its PDF", name="Open"))
    box = card_grid.caption_box(caption, "Caption for the export…", auth.LOCKED_HELP if locked else CAPTION_HELP,
                                MAX_CAPTION, disabled=locked)
    return shown + card_words(row, document, change) + controls + box


def on_card(rows: dict, event: dict):
    """What the person did on a card of the screen (`rows`, by "doc-page"): a card no longer shown does nothing."""
    name = card_grid.item_of(event, list(rows))
    if name is None:
        return
    row = rows[name]
    item, kind, value = (row["doc_id"], row["page"]), event["type"], event["value"]
    if kind == "select":
        hotkeys.select(KEYBOARD, item)
    elif kind == "open":
        hotkeys.open_item(KEYBOARD, item)
    elif kind == "decide" and value in OVERRIDE_OF_CHOICE:
        decide_by_key(item, OVERRIDE_OF_CHOICE[value])
    elif kind == "caption":
        save_caption(*item, value or "")


def card_words(row: dict, document: dict | None, change: str | None) -> str:
    """A card's lines: σ and picture size; page and document; its decision, the model's suggestion and its
    near-duplicate group as badges; who changed it. Always four lines, so the cards of a row keep one height
    whatever happens to a page."""
    sigma = f"σ {row['sigma']:.1f}" if row["sigma"] is not None else "σ —"
    picture = f" · {views.square_inches(row['picture_area'])}" if row["picture_area"] is not None else ""
    total = f" of {document['pages']}" if document and document["pages"] else ""
    name = pathlib.Path(row["doc"]).name
    badges = [card_grid.badge(words, colour) for words, colour, _ in badges_of(row)]
    return (card_grid.line(card_grid.bold(sigma), card_grid.text(picture))
            + card_grid.line(card_grid.text(f"p. {page_number(row['page'])}{total} · {name}"), title=name)
            + card_grid.line(*badges) + card_grid.line(card_grid.text(change or ""), title=change))


def save_caption(doc_id: int, page: int, text: str):
    if not auth.require_curator():
        return
    text = text.strip()[:MAX_CAPTION]
    with common.open_manifest() as manifest:
        manifest.set_caption(doc_id, page, text)
        where = page_words(manifest, doc_id, page)
    st.toast(f"Caption saved for {where}" if text else f"Caption removed from {where}", icon=":material/check:")


def decided(doc_id: int, page: int, key: str):  # the large view's control
    if not auth.require_curator():
        st.session_state.pop(key, None)  # the control shows the saved decision again
        return
    set_override(doc_id, page, OVERRIDE_OF_CHOICE[st.session_state[key]])


def badges_of(row: dict) -> list[tuple[str, str, str]]:
    """The page's badges, (words, colour, icon): its decision; the learned model's suggestion, orange where it
    differs from the decision; its near-duplicate group (see them with the filter Near-duplicates)."""
    if row["override"] is not None:
        badges = [("included" if row["override"] else "excluded", "violet", "person")]
    elif row["status"] == "failed":
        badges = [("failed", "red", "error")]
    else:
        badges = [("kept", "green", "check") if row["keep"] else ("rejected", "gray", "close")]
    if row["suggestion"] is not None:
        differs = bool(row["suggestion"]) != bool(row["keep"])
        sure = f"{math.floor(row['confidence'] * 100)}%"  # never "100%": it is a guess
        badges.append((f"model: {'keep' if row['suggestion'] else 'reject'} {sure}", "orange" if differs else "gray",
                       "psychology"))
    if row["duplicate_group"] is not None:
        badges.append((f"group {row['duplicate_group']}", "blue", "content_copy"))
    return badges


def badges_markdown(row: dict) -> str:
    """The badges in Markdown (:color-badge[...]), for the large view."""
    return " ".join(f":{colour}-badge[:material/{icon}: {words}]" for words, colour, icon in badges_of(row))


def page_words(manifest, doc_id: int, page: int) -> str:
    """"page 6 of issue-1.pdf", the name shown literally in Markdown (a toast)."""
    row = manifest.conn.execute("SELECT path FROM documents WHERE id = ?", (doc_id,)).fetchone()
    name = f" of {common.escape_markdown(pathlib.Path(row[0]).name)}" if row else ""
    return f"page {page_number(page)}{name}"


def set_override(doc_id: int, page: int, keep):
    with common.open_manifest() as manifest:
        manifest.set_override(doc_id, page, keep)
        where = page_words(manifest, doc_id, page)
    word = {True: "Included", False: "Excluded", None: "Cleared the override of"}[keep]
    common.notify(f"{word} {where} · Undo is above the pages")  # a callback, the large view's too


@st.dialog("Page", width="large", on_dismiss=lambda: hotkeys.dismissed(KEYBOARD))
def open_page(threshold: float, doc_id: int, page: int, outline: bool = True):
    common.show_notices()  # a decision made here reruns the dialog alone
    with common.open_manifest() as manifest:
        rows = views.page_rows(manifest, threshold, views.PageFilter(doc_id=doc_id, page=page), limit=1)
        caption = manifest.caption(doc_id, page)
        boxes = manifest.pictures(doc_id, page) if outline else []
    if not rows:
        st.error("This page is no longer in the manifest.")
        return
    row = rows[0]
    st.markdown(f"**{common.escape_markdown(pathlib.Path(row['doc']).name)}**, page {page_number(page)} · "
                + (f"σ {row['sigma']:.1f}" if row["sigma"] is not None else "not scored")
                + (f" · picture {views.square_inches(row['picture_area'])}" if row["picture_area"] is not None else ""))
    line = st.container(horizontal=True, vertical_alignment="center")
    with line:
        st.markdown(badges_markdown(row), width="content")
        choice = CHOICE_OF_OVERRIDE[row["override"]]
        key = f"dialog-{doc_id}-{page}-{choice}"
        st.segmented_control("Decision", list(CHOICES), format_func=CHOICES.get, default=choice, required=True,
                             key=key, label_visibility="collapsed", on_change=decided, args=(doc_id, page, key),
                             disabled=auth.locked(), help=auth.help_for())
        st.space("stretch")
        hotkeys.large_view_buttons(KEYBOARD)
    if caption:
        st.caption(f"Caption: {common.escape_markdown(caption)}")
    try:
        image = common.rendered_page(doc_id, page, row["doc"])
    except views.PageUnavailable as exc:
        st.error(common.escape_markdown(exc), icon=":material/broken_image:")
        return
    hotkeys.zoomed_image(KEYBOARD, views.outline_pictures(image, boxes, row["width"]))
    st.caption(f"Drawn from {common.code_span(row['doc'])}" + (f"; {len(boxes)} picture(s) outlined" if boxes else ""))


common.run_page(main)
