"""Review's Pictures view: a dense grid of the pictures themselves (one element: pages/components/card_grid.py), the
decision as each card's border; include, exclude or give back to the rule, caption, and open a picture on its page
(pages/components/picture_large_view.py) to fix its box, delete it, or add one the scorer missed. Streamlit only;
curation.views.picture_views computes what it shows."""

from __future__ import annotations

import dataclasses
import functools
import pathlib

import streamlit as st

from curation.captions.best import best_caption, counted_sources, kind_of, kind_source
from curation.decisions import keyboard
from curation.views import bulk
from curation.views import picture_bulk
from curation.views import picture_views as pv
from curation import views
from curation.sources.page_numbers import page_number
from pages.components import auth
from pages.components import bulk_job
from pages.components import card_grid
from pages.components import common
from pages.components import keys as hotkeys
from pages.components import learn_boxes
from pages.components import like_this
from pages.components import picture_captions as captions
from pages.components import picture_large_view as large
from pages.components import undo as undo_

PER_SCREEN = 48
COLUMNS = 8  # at most; the grid wraps to fewer on narrow screens
CARD_WIDTH = 132  # px at least: 6 cards a row at 1440 px beside the sidebar
CARD_CONTROL_HELP = "Plus: include the picture; A: auto, the rule decides; minus: exclude it."
BULK_OF_CHOICE = {"include": "include", "auto": "clear", "exclude": "exclude"}
BULK, CAPTION, NOTICE = "pictures_bulk", "pictures_caption", "pictures_notice"
RESTORE = "pictures_restore"  # the Deleted view's "bring back all" question, open
SCREEN_NUMBER, NEXT_AFTER = "pictures_screen", "pictures_next_after"  # the screen's number, the next one's key
SCREENS = "pictures_screens"  # (view, the keys its screens so far start after: [None, screen 1's last, ...])
CAPTION_KEY, MAX_CAPTION, UNDO_HINT = large.CAPTION_KEY, large.MAX_CAPTION, large.UNDO_HINT
KEYBOARD = large.KEYBOARD
# A screen's missing cards are cut from their PDFs about this long a script run (30 ms a card on a 300-dpi page,
# far more on a newspaper's front page): the screen is drawn, and the run after cuts the next.
CARD_SECONDS = 0.5
CARD_RERUN_SECONDS = 0.3
CARDS_WAITED = "pictures_cards_waited"


def show():
    """The Pictures view of Review."""
    manifest = common.require_manifest()
    with manifest:
        threshold = manifest.threshold
        documents = views.documents_for_filter(manifest)
        if not documents:
            st.info("No page is scored yet: ingest an archive first.")
            return
        flt, sort, counts = filters(manifest, documents, threshold)
        total = counts[flt.decision]
        # Deleted pictures show dim under All, and no bulk action changes them.
        bulk_actions(flt, total, threshold, deleted=counts["deleted"] if flt.decision == "all" else 0)
        bulk_job.progress()
        last = views.last_undoable(manifest)
        everywhere = count_keeper(str(common.db_path())).counts(manifest, threshold)
        order, named = like_this.order(manifest, sort, everywhere["all"] - everywhere["deleted"])
        screens = screens_of((flt, named))

        def screen(after):
            if order is None:
                return pv.screen(manifest, threshold, flt, sort, after=after, limit=PER_SCREEN)
            return pv.ordered_screen(manifest, threshold, flt, order.ids, after=after, limit=PER_SCREEN)

        shown = screen(screens[-1])
        if not shown.rows and len(screens) > 1:  # the view shrank (a bulk action, another browser)
            screens[:] = [None]
            shown = screen(None)
        ids = [row["id"] for row in shown.rows]
        notes = like_this.words_of(manifest, order, ids)
        for picture_id, suggestion in like_this.suggestions(manifest, ids).items():
            words = [notes.get(picture_id), like_this.suggestion_words(suggestion)]
            notes[picture_id] = " · ".join(filter(None, words))
        st.session_state[SCREEN_NUMBER] = len(screens)
        st.session_state[NEXT_AFTER] = ((flt, named), shown.next_after)
        cards = pv.screen_crops(manifest, shown.rows, seconds=CARD_SECONDS)
        crops = cards.cards
    if large.OPEN not in st.session_state:
        undo_.bar(last)
    captions.caption_tools(flt, threshold)
    like_this.model_bar()
    like_this.like_banner(flt, threshold, order)
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        st.toast(notice, icon=":material/check:")
    if not shown.rows:
        st.info("No pictures match this view." if flt.decision != "all" else
                "No picture is found on any page yet: pictures are found when pages are scored.")
        learn_boxes.panel("pictures")
        return
    first = (len(screens) - 1) * PER_SCREEN + 1
    shown_of = f"of {total:,} in this view" if order is None else f"of this order (up to {len(order.ids):,})"
    st.caption(f"Pictures {first:,}–{first + len(shown.rows) - 1:,} {shown_of}")
    st.session_state[large.ON_SCREEN] = [row["id"] for row in shown.rows]
    keyboard_review(shown.rows, len(screens), total, hotkeys.Actions(
        decide=decide_by_key, open=large.open_picture, close=large.close_picture,
        undo=undo_.undo_latest if auth.can_curate() else None, version=undo_.latest_change),
        lambda _: large.large_view(threshold))
    if cards.to_draw:
        cards_being_cut(len(shown.rows) - len(cards.to_draw), len(shown.rows))
    grid(shown.rows, crops, {doc["id"]: doc for doc in documents}, notes, sort)
    pager(len(screens), shown.next_after)
    # Under the cards: it is for the whole archive, and the first screen is the cards'.
    learn_boxes.panel("pictures")


def cards_being_cut(done: int, total: int) -> None:
    """Cards missing from the manifest (a manifest ingested before cards were kept, the store `none`, boxes
    redrawn elsewhere) are cut from their PDFs about CARD_SECONDS a run, not a whole screen of newspaper pages
    at once on the click: the screen says so, shows the others from their page's thumbnail, and runs again."""
    st.caption(f":material/hourglass_top: Cutting this screen's cards from their PDFs: {done} of {total}; the "
               "others show their page's thumbnail until then.")
    common.after_this_run(CARDS_WAITED, CARD_RERUN_SECONDS)  # the view again: the next cards, and their grid


# -- filters ------------------------------------------------------------------------------------


def filters(manifest, documents: list[dict], threshold: float) -> tuple[pv.PictureFilter, str, dict]:
    names = {0: "All documents", **{doc["id"]: common.pictured(pathlib.Path(doc["path"]).name) for doc in documents}}
    top = st.container()
    document_col, sort_col = st.columns([3, 2], vertical_alignment="bottom")
    doc_id = document_col.selectbox("Document", list(names), format_func=names.get, key="pic_doc",
                                    bind="query-params", on_change=first_screen)
    sorts = like_this.sorts()
    sort = sort_col.selectbox("Sort by", list(sorts), format_func=sorts.get, key="pic_sort",
                              bind="query-params", on_change=like_this.stop_like,
                              help="Least sure first: the pictures closest to the rule's cutoff; learned from "
                                   "picture decisions: those the picture model is least sure of. Near-duplicates "
                                   "together: pictures of pages that show the same picture, group by group. "
                                   "Reprints: pictures whose embeddings say they are the same picture printed again.")
    counts = count_keeper(str(common.db_path())).counts(manifest, threshold, doc_id or None)
    common.named_in_address("pic_decision", pv.DECISIONS, "all")  # "?pic_decision=kept", whatever its count now
    decision = top.segmented_control(
        "Show", list(pv.DECISIONS), format_func=lambda d: f"{pv.DECISIONS[d]} · {counts[d]:,}",
        required=True, key="pic_decision", on_change=first_screen, help=pv.DECISION_HELP)
    return pv.PictureFilter(decision, doc_id or None), sort, counts


@st.cache_resource(show_spinner=False)
def count_keeper(db: str) -> pv.CountKeeper:
    """The filter counts of the manifest at `db`, kept for every session (see pv.CountKeeper)."""
    return pv.CountKeeper()


def screens_of(view: tuple) -> list:
    """The keys the screens so far start after, for this view (filter and sort); a new view starts afresh,
    however it changed (a widget, the address, the browser's Back). The keyboard goes on to the next or
    previous screen by its number (pages/components/keys.py sets SCREEN_NUMBER)."""
    held = st.session_state.get(SCREENS)
    if held is None or held[0] != view:
        held = st.session_state[SCREENS] = (view, [None])
        st.session_state.pop(SCREEN_NUMBER, None)
    screens, wanted = held[1], st.session_state.get(SCREEN_NUMBER)
    next_view, after = st.session_state.get(NEXT_AFTER, (None, None))
    if wanted == len(screens) + 1 and next_view == view and after is not None:
        screens.append(tuple(after))
    elif wanted == len(screens) - 1 and len(screens) > 1:
        screens.pop()
    return screens


def first_screen():
    st.session_state.pop(SCREENS, None)


def pager(screens: int, next_after):
    if screens == 1 and next_after is None:
        return
    bar = st.container(horizontal=True, vertical_alignment="center")
    bar.button("Previous", icon=":material/arrow_back:", key="pictures-previous", disabled=screens == 1,
               on_click=turn_to, args=(screens - 1,))
    bar.button(f"Next {PER_SCREEN}", icon=":material/arrow_forward:", key="pictures-next",
               disabled=next_after is None, on_click=turn_to, args=(screens + 1,))


def turn_to(screen: int):
    """Go on to the next or back to the previous screen (screens_of turns), as the keyboard does."""
    st.session_state[SCREEN_NUMBER] = screen


# -- bulk actions -------------------------------------------------------------------------------


def bulk_actions(flt: pv.PictureFilter, total: int, threshold: float, deleted: int = 0):
    """Include, exclude, clear or caption every picture of the view; the deleted ones it shows dim (`deleted`)
    stay as they are, and the caption says so, as the view's count holds them."""
    total -= deleted
    if not total:
        return
    if flt.decision == "deleted":
        restore_all(flt, total)
        return
    bar = st.container(horizontal=True, vertical_alignment="center")
    left = f"; the {deleted:,} deleted stay so" if deleted else ""
    bar.caption(f"Every picture in this view ({total:,}{left}):")
    for label, action, icon in (("Include all", "include", ":material/add_circle:"),
                                ("Exclude all", "exclude", ":material/remove_circle:"),
                                ("Clear all overrides", "auto", ":material/undo:")):
        bar.button(label, icon=icon, key=f"pictures-bulk-{action}", type="tertiary", on_click=ask, args=(BULK, action),
                   disabled=auth.locked(), help=auth.help_for())
    bar.button("Caption all", icon=":material/edit_note:", key="pictures-bulk-caption", type="tertiary", on_click=ask,
               args=(CAPTION, True), disabled=auth.locked(), help=auth.help_for())
    # The dialog is drawn on every run while the question is open, so a rerun does not lose it.
    if BULK in st.session_state or CAPTION in st.session_state:
        with common.open_manifest() as manifest:
            counts = pv.override_counts(manifest, threshold, flt)
        if BULK in st.session_state:
            confirm_bulk(flt, counts, threshold, st.session_state[BULK])
        else:
            confirm_captions(flt, counts, threshold)


def restore_all(flt: pv.PictureFilter, total: int):
    """The Deleted view's one bulk action: bring every deleted picture back, after saying how many."""
    bar = st.container(horizontal=True, vertical_alignment="center")
    bar.caption(f"Every deleted picture in this view ({total:,}):")
    bar.button(f"Bring back all {total:,}", icon=":material/restore_from_trash:", key="pictures-bulk-restore",
               type="tertiary", on_click=ask, args=(RESTORE, total), disabled=auth.locked(), help=auth.help_for())
    if RESTORE in st.session_state:
        confirm_restore(flt, total)


@st.dialog("Bring back every deleted picture in the view", on_dismiss=lambda: close(RESTORE))
def confirm_restore(flt: pv.PictureFilter, total: int):
    st.markdown(f"**Bring back all {total:,} deleted pictures** in this view? Each is a picture again, decided by "
                "its override or the rule, and its page follows it. One undo takes them all back.")
    common.confirm_buttons(f"Bring back {total:,} pictures", "pictures-restore", RESTORE, NOTICE,
                           lambda manifest: f"Brought back {picture_bulk.bulk_restore(manifest, flt):,} pictures · {UNDO_HINT}.")


def ask(key: str, value):
    st.session_state[key] = value


def close(key: str):
    st.session_state.pop(key, None)


@st.dialog("Apply to every picture in the view", on_dismiss=lambda: close(BULK))
def confirm_bulk(flt: pv.PictureFilter, counts: dict, threshold: float, action: str):
    verb = {"include": "Include", "exclude": "Exclude", "auto": "Clear the override of"}[action]
    st.markdown(f"**{verb} all {counts['pictures']:,} pictures** in this view?")
    st.markdown(picture_bulk.bulk_override_effect(counts, large.OVERRIDE_OF_CHOICE[action]))

    def apply(manifest) -> str:
        doing = bulk.Bulk(view="pictures", do=BULK_OF_CHOICE[action], filter=dataclasses.asdict(flt),
                          threshold=threshold)
        return bulk_job.apply(manifest, doing, counts["pictures"], f"{verb} {{done:,}} pictures: done · {UNDO_HINT}.")

    common.confirm_buttons(f"{verb} {counts['pictures']:,} pictures", "pictures-bulk", BULK, NOTICE, apply)


@st.dialog("Caption every picture in the view", on_dismiss=lambda: close(CAPTION))
def confirm_captions(flt: pv.PictureFilter, counts: dict, threshold: float):
    text = (st.text_area("Caption", key="pictures-bulk-caption-text", max_chars=MAX_CAPTION,
                         placeholder="e.g. a lady in a promenade dress, full length") or "").strip()
    overwrite = False
    if counts["captioned"]:  # a typed caption is never overwritten unless asked
        overwrite = st.checkbox(f"Also overwrite the {counts['captioned']:,} typed captions",
                                key="pictures-bulk-caption-overwrite")
    count, effect = picture_bulk.bulk_caption_effect(counts, overwrite)
    if text:
        st.markdown(f"**Write this caption on {count:,} of the {counts['pictures']:,} pictures** in this view? "
                    f"{effect}")

    def write(manifest) -> str:
        doing = bulk.Bulk(view="pictures", do="caption", filter=dataclasses.asdict(flt), threshold=threshold,
                          text=text, replace=overwrite)
        said = bulk_job.apply(manifest, doing, count, f"Captioned {{done:,}} pictures · {UNDO_HINT}.")
        forget(CAPTION_KEY)
        return said

    common.confirm_buttons(f"Caption {count:,} pictures", "pictures-bulk-caption", CAPTION, NOTICE, write,
                           disabled=not text or count == 0)


def forget(prefix: str):
    """Inputs starting with `prefix` start afresh from the manifest."""
    for key in [key for key in st.session_state if str(key).startswith(prefix)]:
        del st.session_state[key]


# -- the grid -----------------------------------------------------------------------------------


def card_key(row: dict) -> str:
    """A card's key: its decision and, for the keyboard's focus, the picture."""
    return f"picture-card-{pv.decision_of(row)}-{row['id']}"


def keyboard_review(rows: list[dict], screen: int, total: int, actions: hotkeys.Actions, draw_large_view):
    """The keys do `actions` to the focused card, or to the picture in the large view (see
    curation.decisions.keyboard), which `draw_large_view(picture id)` draws."""
    keys = {row["id"]: card_key(row) for row in rows}
    hotkeys.review_grid(KEYBOARD, list(keys), screen=screen, screen_key=SCREEN_NUMBER, card_key=keys.get,
                        grid=keyboard.Grid(total, PER_SCREEN, COLUMNS), opened_key=large.OPEN,
                        large_view=draw_large_view,
                        paused=BULK in st.session_state or CAPTION in st.session_state, actions=actions)


def decide_by_key(picture_id: int, keep: bool | None):
    if auth.require_curator():
        large.set_override(picture_id, keep)


def grid(rows: list[dict], crops: dict, documents: dict, notes: dict, sort: str):
    """The screen's cards, one element (pages/components/card_grid.py): what the person does comes back as `on_card`."""
    words = captions.sources_on(rows)
    locked = auth.locked()  # once a screen: each asks the server's secrets
    cards = [card_grid.Card(row["id"], card_key(row), card(row, crops.get(row["id"]), documents.get(row["doc_id"]),
                                                             words, locked, notes.get(row["id"])),
                            f"cg-{pv.decision_of(row)} cg-zoom") for row in rows]
    card_grid.show(KEYBOARD, cards, min_width=CARD_WIDTH, columns=COLUMNS,
                   on_event=functools.partial(on_card, {row["id"]: row for row in rows}, sort))


def card(row: dict, crop: bytes | None, document: dict | None, words: tuple[str, ...] = (), locked: bool = False,
         note: str | None = None) -> str:
    """A picture's card, as HTML (every word escaped): the crop, its words, the decision with More like this and
    Open, the caption, the printed legend and the model's."""
    if crop:
        shown = card_grid.image(card_grid.media_url(crop, f"picture-{row['id']}"), large.picture_words(row, plain=True))
    else:
        shown = card_grid.note("No image of this page: no thumbnail is kept and the PDF is not at hand.")
    name = pathlib.Path(row["doc"]).name
    total = f"/{document['pages']}" if document and document["pages"] else ""
    kind = kind_of(row)
    # Short lines, each the same on every card (a status or a note may be blank), so the cards of a row keep one
    # height; one too long for a narrow card ends in "…", whole in its tooltip and in the large view.
    lines = [card_grid.line(card_grid.bold(f"#{row['number']}"),
                            card_grid.text(f" · p. {page_number(row['page'])}{total}")),
             card_grid.line(card_grid.text(f"{views.square_inches(row['box_area'])}{' · ' + kind if kind else ''}"),
                            title=kind_source(row)),
             card_grid.line(card_grid.text(name), title=name),
             card_grid.line(card_grid.text(pv.status_words(row)))]
    if note is not None:
        lines.append(card_grid.line(card_grid.text(note), title=note))
    controls = card_grid.row(
        card_grid.choices(large.CHOICE_OF_OVERRIDE[row["keep"]], CARD_CONTROL_HELP if not locked else auth.LOCKED_HELP,
                          disabled=locked or bool(row["deleted"])),
        card_grid.button("like", "≈", "More like this: sort the view by likeness to this picture",
                         name="More like this"),
        card_grid.button("open", "⤢", "Open: the picture on its page, to fix its box, delete it or add a missed one",
                         name="Open"))
    hint = best_caption(None, *counted_sources(row)[1:])  # what the picture shows without yours
    box = card_grid.caption_box(row["caption"], hint[:80] if hint else "Caption…",
                                auth.LOCKED_HELP if locked else large.CAPTION_HELP, MAX_CAPTION, disabled=locked)
    return shown + "".join(lines) + controls + box + captions.card_lines(row, words, locked)


def on_card(rows: dict, sort: str, event: dict):
    """What the person did on a card of the screen (`rows`, by id): a card no longer shown does nothing."""
    picture_id = card_grid.item_of(event, list(rows))
    if picture_id is None:
        return
    kind, value = event["type"], event["value"]
    if kind == "select":
        hotkeys.select(KEYBOARD, picture_id)
    elif kind == "open":
        hotkeys.open_item(KEYBOARD, picture_id)
    elif kind == "like":
        like_this.start_like(picture_id, sort)
    elif kind == "decide" and value in large.OVERRIDE_OF_CHOICE and not rows[picture_id]["deleted"]:
        if auth.require_curator():
            large.set_override(picture_id, large.OVERRIDE_OF_CHOICE[value])
    elif kind == "caption":
        large.save_caption(picture_id, value or "")
    elif kind in ("copy", "replace") and value in captions.SWITCHED_OFF:
        (captions.copy_clicked if kind == "copy" else functools.partial(captions.copied, overwrite=True))(
            picture_id, value)
