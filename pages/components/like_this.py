"""The Pictures view's tools that compare pictures by their embeddings: More like this (the view sorted by
likeness to one picture, with the way back to the sort before), Exclude / Include all like this down to a
likeness the curator sets, the reprints together, and the model learned from the curator's picture decisions
(its suggestion on each card, least sure first, Learn). Streamlit only; curation.views.review_orders and
curation.decisions.picture_model compute what it shows."""

from __future__ import annotations

import dataclasses
import pathlib

import streamlit as st

from curation.decisions import picture_model
from curation.decisions import picture_similarity as similarity
from curation.sources.page_numbers import page_number
from curation.views import bulk, picture_bulk, review_orders
from curation.views import picture_views as pv
from pages.components import auth, bulk_job, common

LIKE = "pictures_like"  # {"picture": id, "back_to": the sort before}: the view sorted like one picture
LIKE_BULK = "pictures_like_bulk"  # the Exclude / Include all like this question, open: "exclude" or "include"
LIKENESS = "pictures_likeness"  # the slider: down to which likeness
LEARNED = "pictures_learned"  # what the last Learn said, shown once
NOTICE = "pictures_notice"  # the Pictures view's (pages/components/pictures_view.NOTICE)
UNDO_HINT = "Undo (Ctrl+Z or the Undo button) takes it back"


@st.cache_resource(show_spinner=False)
def keeper() -> similarity.EmbeddingKeeper:
    """The embeddings of the manifests shown, kept for every session (see similarity.EmbeddingKeeper)."""
    return similarity.KEEPER


def sorts() -> dict[str, str]:
    """Every sort of the view: SQL's and the embeddings'."""
    return {**{name: words for name, (words, _) in pv.SORTS.items()}, **review_orders.ORDERS}


def start_like(picture_id: int, sort: str):
    st.session_state[LIKE] = {"picture": int(picture_id), "back_to": sort}
    st.session_state.pop("pictures_screens", None)  # the first screen of the new order


def stop_like():
    st.session_state.pop(LIKE, None)
    st.session_state.pop(LIKE_BULK, None)
    st.session_state.pop("pictures_screens", None)


def order(manifest, sort: str, pictures: int) -> tuple[review_orders.Order | None, tuple]:
    """The order the view shows when the embeddings sort it (None: SQL sorts it), and what names the view."""
    like = st.session_state.get(LIKE)
    with st.spinner("Comparing the pictures…"):
        if like is not None:
            return review_orders.like_order(keeper(), manifest, like["picture"], pictures), ("like", like["picture"])
        if sort == "learned":
            return review_orders.learned_order(keeper(), manifest, pictures), (sort, _model_version(manifest))
        if sort == "reprints":
            return review_orders.reprints(keeper(), manifest, pictures), (sort,)
    return None, (sort,)


def _model_version(manifest) -> str | None:
    model = picture_model.stored(manifest)
    return model.version if model else None


def words_of(manifest, found: review_orders.Order | None, ids: list[int]) -> dict[int, str]:
    """What each card of the screen says of its place in the order (its likeness, its reprint group)."""
    if found is None:
        return {}
    words = {i: found.words[i] for i in ids if i in found.words}
    like = st.session_state.get(LIKE)
    if like is not None and len(words) < len(ids):
        words.update(review_orders.like_words(keeper(), manifest, like["picture"], ids))
    return words


# -- More like this: the banner, and all like this -------------------------------------------------


def like_banner(flt: pv.PictureFilter, threshold: float, found: review_orders.Order | None):
    like = st.session_state.get(LIKE)
    if like is None:
        if found is not None and found.note:
            st.info(found.note, icon=":material/info:")
            if found.note.startswith("Finding the reprints"):
                st.button("Refresh", icon=":material/refresh:", key="pictures-reprints-refresh")
        return
    with common.open_manifest() as manifest:
        row = manifest.picture(like["picture"])
    if row is None:
        stop_like()
        st.rerun()
    back = sorts().get(like["back_to"], "the previous sort")
    bar = st.container(horizontal=True, vertical_alignment="center", key="pictures-like-bar")
    bar.markdown(f":material/image_search: **Sorted like picture {row['number']}** on p. {page_number(row['page'])} "
                 f"of {common.escape_markdown(pathlib.Path(row['doc']).name)}, most alike first")
    bar.button(f"Back to {back}", icon=":material/arrow_back:", key="pictures-like-back", on_click=stop_like)
    if found is not None and found.note:
        st.info(found.note, icon=":material/info:")
    if found is None or not len(found.ids):
        return
    likeness = st.slider("Down to likeness", 0.5, 1.0, similarity.LIKE_DEFAULT, 0.01, key=LIKENESS,
                         help="How alike a picture must be (the cosine of the two pictures' embeddings: 1 the same "
                              f"picture; reprints measure {similarity.REPRINT:.2f} and up).")
    with common.open_manifest() as manifest:
        count = similarity.hold_like(manifest, like["picture"], likeness, keeper())
        counts = pv.override_counts(manifest, threshold, flt, extra=similarity.AMONG_LIKE)
    bar = st.container(horizontal=True, vertical_alignment="center")
    bar.caption(f"{counts['pictures']:,} pictures of this view are at least {likeness:.2f} alike"
                + (f" ({count - counts['pictures']:,} more lie outside the view or are deleted)"
                   if count > counts["pictures"] else "") + ":")
    for label, action, icon in (("Exclude all like this", "exclude", ":material/remove_circle:"),
                                ("Include all like this", "include", ":material/add_circle:")):
        bar.button(label, icon=icon, key=f"pictures-like-{action}", type="tertiary", on_click=ask, args=(action,),
                   disabled=auth.locked() or not counts["pictures"], help=auth.help_for())
    if LIKE_BULK in st.session_state:
        confirm_like(flt, threshold, counts, likeness, st.session_state[LIKE_BULK])


def ask(action: str):
    st.session_state[LIKE_BULK] = action


@st.dialog("Apply to every picture like this one", on_dismiss=lambda: st.session_state.pop(LIKE_BULK, None))
def confirm_like(flt: pv.PictureFilter, threshold: float, counts: dict, likeness: float, action: str):
    verb = {"include": "Include", "exclude": "Exclude"}[action]
    st.markdown(f"**{verb} all {counts['pictures']:,} pictures** of this view at least {likeness:.2f} alike to "
                "the picture the view is sorted like?")
    st.markdown(picture_bulk.bulk_override_effect(counts, action == "include"))

    def apply(manifest) -> str:
        doing = bulk.Bulk(view="pictures", do=action, filter=dataclasses.asdict(flt), threshold=threshold,
                          like={"picture": st.session_state[LIKE]["picture"], "similarity": round(likeness, 4)})
        done = f"{verb}d {{done:,}} pictures like this · {UNDO_HINT}."
        return bulk_job.apply(manifest, doing, counts["pictures"], done)

    common.confirm_buttons(f"{verb} {counts['pictures']:,} pictures", "pictures-like-bulk", LIKE_BULK, NOTICE, apply)


# -- the model learned from picture decisions ------------------------------------------------------


def model_bar():
    """What the picture model learned from, and Learn."""
    with common.open_manifest() as manifest:
        model = picture_model.stored(manifest)
    bar = st.container(horizontal=True, vertical_alignment="center", key="pictures-model-bar")
    if model is None:
        bar.caption("**Picture model** · none learned yet: include, exclude, delete or add some pictures, then Learn; "
                    "until then suggestions are the shipped verdict's.")
    else:
        agreed, of = model.agreement["learned"]
        bar.caption(f"**Picture model** · learned from {model.decisions:,} picture decisions · agrees with "
                    f"{agreed:,} of {of:,} it did not learn from")
    if bar.button("Learn from my picture decisions", icon=":material/model_training:", key="pictures-learn",
                  type="tertiary", disabled=auth.locked(), help=auth.help_for()) and auth.require_curator():
        with st.spinner("Learning from your picture decisions…"), common.open_manifest() as manifest:
            st.session_state[LEARNED] = picture_model.learn(manifest, keeper().embeddings(manifest))
        st.rerun()
    outcome = st.session_state.pop(LEARNED, None)
    if outcome is not None:
        (st.success if outcome.learned else st.warning)(outcome.message, icon=":material/psychology:")


def suggestions(manifest, ids: list[int]) -> dict[int, picture_model.Suggestion]:
    """The learned model's suggestion for each of a screen's pictures (none until one is learned)."""
    model = picture_model.stored(manifest)
    return picture_model.suggestions(manifest, model, ids) if model is not None else {}


def suggestion_words(suggestion: picture_model.Suggestion | None) -> str:
    if suggestion is None:
        return ""
    return f"model: {'keep' if suggestion.keep else 'exclude'} {suggestion.confidence:.0%}"
