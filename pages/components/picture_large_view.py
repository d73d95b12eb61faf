"""A picture of Review's Pictures view opened large, on its page: its decision, kind and captions, and its box
fixed, a missed picture added by dragging on the page, or the picture deleted; its mask for masked loss shown over
it, turned off, or a stamp painted out of it by dragging; with what a card does to one picture too (decide,
caption). Streamlit only; curation.views.picture_views computes what it shows."""

from __future__ import annotations

import functools
import pathlib
import zlib

import streamlit as st
from streamlit_image_coordinates import streamlit_image_coordinates

from curation import views
from curation.captions.best import best_caption, counted_sources
from curation.captions.unread import read_when_included
from curation.decisions import keyboard
from curation.decisions.picture_kinds import suggested_like, with_learned_kinds
from curation.manifest.caption_limit import CAPTION_CHARS
from curation.manifest.pictures import PictureError
from curation.sources.page_numbers import page_number
from curation.views import picture_views as pv
from pages.components import auth, component_values, common
from pages.components import keys as hotkeys
from pages.components import picture_captions as captions
from pages.components import undo as undo_

KEYBOARD = "review-pictures"
CHOICES = {"include": "Include", "auto": "Auto", "exclude": "Exclude"}
CHOICE_OF_OVERRIDE = {1: "include", None: "auto", 0: "exclude"}
OVERRIDE_OF_CHOICE = {"include": True, "auto": None, "exclude": False}
OPEN = "pictures_open"
ON_SCREEN = "pictures_on_screen"  # the ids of the screen's pictures, for next and previous in the large view
CLICK, DRAG_PROBLEM = "pictures_click", "pictures_drag_problem"  # which drawing-mode widget is on; why a drag drew no box
PENDING_BOX = "pictures_pending_box"  # a drawn box that would exclude the picture, waiting for the curator's word
FIT = f"{KEYBOARD}-fit"  # set: the large view shows the picture fitted (its value then the fit's own zoom)
CAPTION_KEY = "picture-caption-"
NO_KIND = "None suggested: choose one, or the caption uses the export's class word"  # the job was unsure or not run
CAPTION_HELP = ("Your caption, saved when you press Enter or leave the box; it wins over the printed legend and the "
                "model's caption.")
MAX_CAPTION = CAPTION_CHARS  # the bound the manifest holds every caption to
UNDO_HINT = captions.UNDO_HINT
CLICK_MODES = {"fix": "Fix this picture's box", "add": "Add a missed picture", "stamp": "Paint out of the mask"}
MASK_SHOWN = "pictures_mask_shown"  # set: the large view shows the open picture's mask over it
KINDS = {kind: kind.capitalize() for kind in pv.KINDS}
VIEW_LONG_SIDE = 1400  # pixels: the page in the large view, sharp enough to place a corner
FRAME_WIDTH, FRAME_HEIGHT = 731, 520  # pixels: the page's frame in the large view at most (its column at 1440 px)


# -- one picture: its decision and caption, from a card or the large view ----------------------------


def caption_input(row: dict, where: str = "card", *, locked: bool | None = None):
    # The saved caption is part of the key: a bulk caption, an undo or another browser shows at once.
    key = f"{CAPTION_KEY}{where}-{row['id']}-{zlib.crc32((row['caption'] or '').encode()):08x}"
    locked = auth.locked() if locked is None else locked
    hint = best_caption(None, *counted_sources(row)[1:])  # what the picture shows without yours
    st.text_input("Caption", value=row["caption"] or "", key=key, max_chars=MAX_CAPTION, label_visibility="collapsed",
                  placeholder=f"{hint[:80]}" if hint else "Caption…", on_change=captioned, args=(row["id"], key),
                  disabled=locked,
                  help=auth.LOCKED_HELP if locked else CAPTION_HELP)


def captioned(picture_id: int, key: str):
    if not auth.require_curator():
        st.session_state.pop(key, None)
        return
    save_caption(picture_id, st.session_state[key] or "")


def save_caption(picture_id: int, text: str):
    if not auth.require_curator():
        return
    text = text.strip()[:MAX_CAPTION]
    with common.open_manifest() as manifest:
        manifest.set_picture_captions([(picture_id, text)])
        row = manifest.picture(picture_id)
    common.notify(f"{'Caption saved for' if text else 'Caption removed from'} {picture_words(row)} · {UNDO_HINT}")


def decided(picture_id: int, key: str):
    if not auth.require_curator():
        st.session_state.pop(key, None)
        return
    set_override(picture_id, OVERRIDE_OF_CHOICE[st.session_state[key]])


def set_override(picture_id: int, keep):
    with common.open_manifest() as manifest:
        manifest.set_picture_override(picture_id, keep)
        if keep:
            read_when_included(manifest, picture_id)  # a picture judged not a picture had its legend left unread
        row = manifest.picture(picture_id)
    word = {True: "Included", False: "Excluded", None: "Gave back to the rule"}[keep]
    page = "kept" if row["page_keep"] else "not kept"
    common.notify(f"{word} {picture_words(row)}; its page is {page} · {UNDO_HINT}")


def picture_words(row, plain: bool = False) -> str:
    """"picture 3 on p. 4 of issue-1.pdf", as Markdown that shows the name literally (or, `plain`, as it is)."""
    name = pathlib.Path(row["doc"]).name
    name = name if plain else common.escape_markdown(name)
    return f"picture {row['number']} on p. {page_number(row['page'])} of {name}"


def decision_badge(row: dict):
    state = pv.decision_of(row)
    by_curator = row["keep"] is not None and not row["deleted"]
    colour = {"kept": "green", "excluded": "red", "deleted": "gray"}[state]
    st.badge(state, icon=":material/person:" if by_curator else None, color=colour)


# -- the large view -------------------------------------------------------------------------------


def open_picture(picture_id: int):
    """Open a picture large (from a card, a key, next or previous): drawing on the page starts switched off, so
    a drag meant for one picture never redraws the next."""
    st.session_state[OPEN] = picture_id
    st.session_state[FIT] = True  # opens centred on the picture, which fills most of the view
    leave_drawing()


def close_picture():
    st.session_state.pop(OPEN, None)
    leave_drawing()


def leave_drawing():
    # A widget of a new key, not the old one's value dropped or set: the browser keeps the drawing mode it
    # showed and sent it back on the next run, so the mode came back pressed on the next picture.
    st.session_state[CLICK] = st.session_state.get(CLICK, 0) + 1
    st.session_state.pop(DRAG_PROBLEM, None)
    st.session_state.pop(PENDING_BOX, None)


@st.dialog("Picture", width="large", on_dismiss=lambda: hotkeys.dismissed(KEYBOARD))
def large_view(threshold: float):
    # A click inside a dialog reruns the dialog alone: what it shows is read afresh here, not passed in.
    common.show_notices()
    picture_id, on_screen = st.session_state.get(OPEN), st.session_state.get(ON_SCREEN, [])
    with common.open_manifest() as manifest:
        last = views.last_undoable(manifest)
        row = manifest.picture(picture_id) if picture_id is not None else None
        if row is None:
            st.error("This picture is no longer in the manifest.")
            return
        row = with_learned_kinds(manifest, [dict(row)])[0]
        boxes = pv.page_boxes(manifest, row["doc_id"], row["page"])
        try:
            image = common.rendered_page(row["doc_id"], row["page"], row["doc"], VIEW_LONG_SIDE)
            drawn_from = "its PDF"
        except views.PageUnavailable as exc:
            st.warning(common.escape_markdown(exc), icon=":material/broken_image:")
            image = views.thumbnails(manifest, [(row["doc_id"], row["page"])]).get((row["doc_id"], row["page"]))
            drawn_from = "its thumbnail (the PDF is not at hand)"
    name = common.escape_markdown(pathlib.Path(row["doc"]).name)
    st.markdown(f"**{name}**, page {page_number(row['page'])} · picture **{row['number']}** of {len(boxes)} · "
                f"{views.square_inches(row['box_area'])}")
    bar = st.container(horizontal=True, vertical_alignment="center")
    with bar:
        decision_badge(row)
        if pv.status_words(row, badge=True):
            st.caption(pv.status_words(row, badge=True))
        choice = CHOICE_OF_OVERRIDE[row["keep"]]
        key = f"picture-dialog-{picture_id}-{choice}"
        st.segmented_control("Decision", list(CHOICES), format_func=CHOICES.get, default=choice, required=True,
                             key=key, label_visibility="collapsed", on_change=decided, args=(picture_id, key),
                             disabled=auth.locked() or bool(row["deleted"]), help=auth.help_for())
        if row["deleted"]:
            st.button("Bring back", icon=":material/restore_from_trash:", key="picture-restore",
                      on_click=delete, args=(picture_id, False), disabled=auth.locked(), help=auth.help_for())
        else:
            st.button("Delete: not a picture", icon=":material/delete:", key="picture-delete",
                      on_click=delete, args=(picture_id, True), disabled=auth.locked(),
                      help=auth.help_for("A false picture: never exported; the page follows its other pictures."))
        st.space("stretch")
        index = on_screen.index(picture_id) if picture_id in on_screen else -1
        st.button("", icon=":material/arrow_back:", key="picture-previous", disabled=index <= 0,
                  help="Previous picture", on_click=open_picture, args=(on_screen[max(index - 1, 0)],))
        st.button("", icon=":material/arrow_forward:", key="picture-next",
                  disabled=index < 0 or index >= len(on_screen) - 1, help="Next picture",
                  on_click=open_picture, args=(on_screen[min(index + 1, len(on_screen) - 1)],))
    page_col, side_col = st.columns([3, 2])
    with side_col:
        kind_input(row)
        mask_inputs(row)
        caption_input(row, "dialog")
        captions.other_captions(row, "dialog")
        if last is not None:
            undo_.bar(last, "-large")
    with page_col:
        if image is None:
            st.error("No image of this page is at hand, so its boxes cannot be drawn.")
            return
        draw_on_page(row, boxes, image, drawn_from)


def kind_input(row: dict):
    """The picture's kind for the caption's {kind}: until the curator says, the kind of the pictures like it that
    the curator marked, else the shipped model's suggestion, each saying where it came from; the class word where
    none says one."""
    learned, suggested = row.get("kind_learned"), row["kind_suggested"]
    suggestion = (f"{learned.kind.capitalize()} (suggested: {learned.words()})" if learned else
                  f"{suggested.capitalize()} (suggested from its look)" if suggested else NO_KIND)
    words = {None: suggestion, **KINDS}
    key = f"picture-kind-{row['id']}-{row['kind']}"  # a change elsewhere (an undo) shows at once
    st.selectbox("Kind", list(words), format_func=words.get, index=list(words).index(row["kind"]), key=key,
                 on_change=kind_changed, args=(row["id"], key), disabled=auth.locked(),
                 help=auth.help_for("What the picture is, for the caption's {kind}. A kind you set is suggested "
                                    "for the pictures of this archive that look like it; elsewhere the picture "
                                    "job suggests one from the picture's look only where it is fairly sure, and "
                                    "is often wrong all the same; with none, {kind} is the export's class word."))


def kind_changed(picture_id: int, key: str):
    if not auth.require_curator():
        st.session_state.pop(key, None)
        return
    kind = st.session_state[key]
    with common.open_manifest() as manifest:
        manifest.set_picture_kinds([(picture_id, kind)])
        row = manifest.picture(picture_id)
        like = len(suggested_like(manifest, picture_id)) if kind else 0
    taught = f"; {like} like it {'is' if like == 1 else 'are'} now suggested {kind}" if like else ""
    common.notify(f"{picture_words(row).capitalize()} is {'a ' + kind if kind else 'as suggested'}{taught} · "
                  f"{UNDO_HINT}")


def mask_inputs(row: dict):
    """The picture's mask for masked loss: shown over the page (a switch), on or off (off: its whole box is
    learned), and the rectangles painted out of it taken back."""
    with st.container(horizontal=True, vertical_alignment="center", key="picture-mask"):
        st.toggle("Show the mask", key=MASK_SHOWN,
                  help="Veil what of the picture's box the export's mask leaves out (a trainer with masked loss "
                       "does not learn it): the paper, a legend or type the box took in, a stamp painted out.")
        key = f"picture-mask-on-{row['id']}-{row['mask_off']}"  # an undo elsewhere shows at once
        st.toggle("Mask on", value=not row["mask_off"], key=key, on_change=mask_switched, args=(row["id"], key),
                  disabled=auth.locked(), help=auth.help_for("Off: the picture's whole box is learned."))
    st.caption(f"Mask: {pv.mask_words(row)}. Paint out a stamp or a mark: pick “Paint out of the mask” under the "
               "page and drag over it.")
    if row["mask_stamps"]:
        st.button("Take back the painted-out parts", key="picture-mask-clear", on_click=stamps_cleared,
                  args=(row["id"],), disabled=auth.locked(), help=auth.help_for())


def mask_switched(picture_id: int, key: str):
    if not auth.require_curator():
        st.session_state.pop(key, None)
        return
    on = bool(st.session_state[key])
    with common.open_manifest() as manifest:
        manifest.set_mask_off([(picture_id, not on)])
        row = manifest.picture(picture_id)
    st.session_state[MASK_SHOWN] = True
    common.notify(f"Turned {'on' if on else 'off'} the mask of {picture_words(row)}"
                  + ("" if on else ": its whole box is learned") + f" · {UNDO_HINT}")


def stamps_cleared(picture_id: int):
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        manifest.clear_mask_stamps(picture_id)
        row = manifest.picture(picture_id)
    common.notify(f"Took back the parts painted out of the mask of {picture_words(row)} · {UNDO_HINT}")


def draw_on_page(row: dict, boxes: list[dict], image: bytes, drawn_from: str):
    """The page with its boxes, opened centred on the picture; in a drawing mode a drag draws a box (or, from a
    corner handle of this one, moves that corner)."""
    locked = auth.locked()
    box = (row["bx0"], row["by0"], row["bx1"], row["by1"])
    fitted = st.session_state.get(FIT) is not None
    if fitted:
        region = pv.fit_region(box, row["width"], row["height"])
        st.session_state[FIT] = row["width"] / max(1, region[2] - region[0])  # + and − step from here
    # The drawing modes and the zoom share a row, so the page starts high enough for its frame to fit the screen.
    with st.container(horizontal=True, vertical_alignment="center", gap="medium", key="picture-page-tools"):
        mode = st.segmented_control("Draw on the page", list(CLICK_MODES), format_func=CLICK_MODES.get,
                                    key=f"{CLICK}-{st.session_state.get(CLICK, 0)}", disabled=locked,
                                    label_visibility="collapsed", help=auth.help_for(
                                        "Draw on the page: drag across the picture, from one corner to the "
                                        "opposite one."))
        level = zoom_buttons(st.session_state.get(FIT))
    # Always one line here, empty or not: an element put in above the page moved the page's frame to a new place,
    # where its image was sized in a frame not yet as wide as the view and stayed cut off at about 200 px.
    st.caption("" if locked else "Pick a way of drawing to draw on the page." if not mode else
               "Drag across the stamp or mark to leave it out of the mask (veiled)." if mode == "stamp" else
               "Drag from one corner of the picture to the opposite one"
               + (": a drag that starts on one of the blue box's white corner handles moves that corner, any "
                  "other drag draws a new box." if mode == "fix" else "."))
    if not fitted:
        region = pv.zoom_region(box, row["width"], row["height"], level)
    grab = pv.CORNER_GRAB * (region[2] - region[0])
    outlined = pv.numbered_outline(image, boxes, row["width"], selected=row["id"],
                                   handles=grab if mode == "fix" and not locked else None)
    if st.session_state.get(MASK_SHOWN) or mode == "stamp":
        outlined = pv.with_mask(outlined, row, row["width"])
    page = pv.zoomed(outlined, region, row["width"])
    key = f"picture-page-{row['id']}"
    streamlit_image_coordinates(page, key=key, width=frame_width(region), image_format="JPEG", jpeg_quality=85,
                                cursor="crosshair" if mode else "auto", click_and_drag=bool(mode),
                                on_click=functools.partial(dragged, row["id"], key, mode, region))
    where = ("Centred on this picture." if fitted else f"Zoomed {level:g}× around this picture." if level > 1 else "")
    st.caption(f"Drawn from {drawn_from}; {len(boxes)} picture(s) numbered, this one in blue, deleted ones dashed. "
               + where)
    problem = st.session_state.pop(DRAG_PROBLEM, None)
    if problem:
        st.error(f"No box drawn: {common.escape_markdown(problem)}. Drag from one corner of the picture to the "
                 "opposite one.", icon=":material/crop_free:")
    pending = st.session_state.get(PENDING_BOX)
    if pending and pending["id"] == row["id"]:
        with st.container(border=True, key="picture-pending-box"):
            st.warning(f"This box would exclude the picture: {common.escape_markdown(pending['change'])}. Save it?",
                       icon=":material/warning:")
            yes, no = st.columns(2)
            yes.button("Save the box and exclude it", key="picture-pending-save", on_click=save_pending,
                       icon=":material/check:")
            no.button("Keep the old box", key="picture-pending-keep", on_click=st.session_state.pop,
                      args=(PENDING_BOX, None), icon=":material/undo:")


def save_pending():
    pending = st.session_state.pop(PENDING_BOX, None)
    if not pending or not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        row = manifest.picture(pending["id"])
    if row is not None:
        drawn(dict(row), "fix", pending["box"])


def dragged(picture_id: int, key: str, mode: str | None, region):
    """A drag on the page (`key`'s value) as drawn in `mode` with the page shown at `region`: its box saved
    before the large view runs again, so one run shows it (the grid behind follows when the view closes). A
    redrawn box that would exclude the picture (under the picture cutoff) waits for the curator's word."""
    st.session_state.pop(PENDING_BOX, None)
    drag = st.session_state.get(key)
    if not mode or not drag or not auth.require_curator():
        return
    try:  # a forged drag (NaN, infinity, a string...) draws nothing and says why
        drag = component_values.numbers(drag, ("x1", "y1", "x2", "y2", "width"), 0, component_values.MAX_PIXELS)
    except component_values.BadComponentValue as exc:
        st.session_state[DRAG_PROBLEM] = str(exc)
        return
    with common.open_manifest() as manifest:
        row = manifest.picture(picture_id)
        if row is None:
            return
        row = dict(row)
        own = (row["bx0"], row["by0"], row["bx1"], row["by1"]) if mode == "fix" else None
        try:
            start = pv.page_point((drag["x1"], drag["y1"]), drag["width"], region)
            end = pv.page_point((drag["x2"], drag["y2"]), drag["width"], region)
            box = pv.dragged_box(own, start, end, pv.CORNER_GRAB * (region[2] - region[0]))
            if mode == "stamp":
                manifest.add_mask_stamp(picture_id, box)
                common.notify(f"Painted a part out of the mask of {picture_words(row)} · {UNDO_HINT}.")
                return
            change = pv.box_change(manifest, picture_id, box) if mode == "fix" else None
        except PictureError as exc:
            st.session_state[DRAG_PROBLEM] = str(exc)  # shown by the run that follows, in the large view
            return
    if change and pv.decision_of(row) == "kept":
        st.session_state[PENDING_BOX] = {"id": picture_id, "box": box, "change": change}
        return
    drawn(row, mode, box)


def frame_width(region) -> int:
    """The page's width on screen: the view's column, or less for a tall part of a page, so that all of it (and
    the picture in it, at any zoom) is on a 900-pixel-high screen under the view's controls."""
    return round(min(FRAME_WIDTH, FRAME_HEIGHT * (region[2] - region[0]) / max(1, region[3] - region[1])))


def zoom_buttons(fit: float | None = None) -> float:
    """Zoom out, the zoom, zoom in (as − and + do), and back to the picture fitted: the large view's page
    enlarged around the picture. `fit`: the fitted view's own zoom, while it is shown."""
    bar = st.container(horizontal=True, vertical_alignment="center", gap="small", width="content",
                       key="picture-zoom-bar")
    level = hotkeys.zoom(KEYBOARD)
    shown = fit if isinstance(fit, float) else level
    bar.button("", icon=":material/zoom_out:", key="picture-zoom-out", type="tertiary", on_click=hotkeys.zoom_by,
               args=(KEYBOARD, -1), disabled=shown <= keyboard.ZOOMS[0], help="Zoom out (−)")
    bar.text(f"fitted, {shown:.1f}×" if isinstance(fit, float) else f"{level:g}×")
    bar.button("", icon=":material/zoom_in:", key="picture-zoom-in", type="tertiary", on_click=hotkeys.zoom_by,
               args=(KEYBOARD, 1), disabled=shown >= keyboard.ZOOMS[-1], help="Zoom in (+): around this picture")
    bar.button("", icon=":material/fit_screen:", key="picture-zoom-fit", type="tertiary", on_click=fit_again,
               disabled=fit is not None, help="Centre on this picture, which fills most of the view")
    return level


def fit_again():
    st.session_state[FIT] = True


def drawn(row: dict, mode: str, box: list[int]):
    """Save a drawn box: the open picture's new box, or a new picture on its page (then opened)."""
    with common.open_manifest() as manifest:
        if mode == "fix":
            manifest.set_picture_box(row["id"], box)
            after = dict(manifest.picture(row["id"]))
            change = pv.decision_change(row, after)  # said aloud: a smaller box may drop the picture
            common.notify(f"Redrew the box of {picture_words(row)}" + (f"; it is {change}" if change else "")
                          + f" · {UNDO_HINT}.")
            pv.crops(manifest, [after])  # its card, cut for the new box now: the grid shows it at once
        else:
            new = manifest.add_picture(row["doc_id"], row["page"], box)
            added = manifest.picture(new)
            pv.crops(manifest, [added])
            open_picture(new)
            common.notify(f"Added {picture_words(added)} · {UNDO_HINT}.")


def delete(picture_id: int, deleted: bool):
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        manifest.delete_picture(picture_id, deleted)
        row = manifest.picture(picture_id)
    common.notify(f"{'Deleted' if deleted else 'Brought back'} {picture_words(row)} · {UNDO_HINT}")
