"""Threshold: the decision rule and its cutoffs, live figures, histograms and the pages at the edge."""

import math
import os
import pathlib

import altair as alt
import pandas as pd
import streamlit as st

from curation.views import cutoff_counts
from curation.manifest import picture_decisions
from curation import views
from curation.runs import jobs
from curation.sources.page_numbers import page_number
from pages.components import auth
from pages.components import common
from pages.components import learn_boxes

# What is being tried survives page switches, unlike widget state: drafts live under their own keys.
RULE_DRAFT, RULE_WIDGET = "rule_draft", "threshold_rule"
DRAFT = "threshold_draft"  # σ
SLIDER, NUMBER = "threshold_slider", "threshold_number"
SHARE_DRAFT = "picture_area_draft"  # square inches
SHARE_SLIDER, SHARE_NUMBER = "picture_area_slider", "picture_area_number"
SCORE_DRAFT = "picture_score_draft"  # the learned verdict's score, 0 to 1
SCORE_SLIDER, SCORE_NUMBER = "picture_score_slider", "picture_score_number"
SEEN = "decision_seen"  # the saved decision the drafts started from
KEPT_COLOR, REJECTED_COLOR, CUT_COLOR = "#3f7f4f", "#c9bfae", "#8a4b2a"
STRIP = 8
EDGE_THUMB = 180  # px: large enough to tell an engraving from text
SHARE_SLIDER_MAX = 20.0  # square inches: cartoons and plates cover 10 and more, stock cuts about 1


def main():
    st.title("Threshold")
    st.caption("How pages you have not overruled are decided. Nothing changes until you save.",
               help="Try a rule and its cutoffs: the figures, histograms and pages at the edge follow at once.")
    manifest = common.require_manifest()
    with manifest:
        span = views.sigma_range(manifest)
        if span is None:
            st.info("No page is scored yet: ingest an archive first.")
            common.link("pages/ingest.py", "Ingest", ":material/upload_file:")
            return
        count_in_background(manifest)  # every rule's counts at every cutoff, where the manifest lacks them
        saved = (manifest.rule, manifest.threshold, manifest.picture_area_min, manifest.picture_score_min)
        sync_drafts(saved)
        rule, draft, share, score = drafts()
        trying = {"rule": rule, "picture_area_min": share, "picture_score_min": score}

        rule_control()
        explain(manifest, rule, draft, share)
        show_figures(manifest, draft, saved[1], trying)
        save_bar(saved, (rule, draft, share, score), views.has_scores(manifest))
        if rule == "sigma":
            sigma_section(manifest, draft, share, trying, span, saved)
            score_section(manifest, score, saved[3])
        else:  # the active rule's controls first; σ folds away, for comparison with the original method
            picture_section(manifest, draft, share, trying, span, saved)
            score_section(manifest, score, saved[3])
            with st.expander("σ, the original method's score: its cutoff, histogram and Suggest", key="sigma_fold"):
                sigma_section(manifest, draft, share, trying, span, saved)
        show_borderline(manifest, draft, trying)
    st.subheader("The picture finder", help=learn_boxes.HELP)
    learn_boxes.panel("threshold")


# -- drafts -----------------------------------------------------------------------------------


def sync_drafts(saved: tuple):
    """Start the drafts from the saved decision, and again whenever it changed elsewhere (Save, Review's
    "let the model decide", the CLI), so a draft never hides a change made meanwhile."""
    if st.session_state.get(SEEN) == saved:
        return
    st.session_state[SEEN] = saved
    set_rule(saved[0])
    set_value(saved[1])
    set_share(saved[2])
    set_score(saved[3])


def drafts() -> tuple[str, float, float, float]:
    return (st.session_state[RULE_DRAFT], float(st.session_state[DRAFT]), float(st.session_state[SHARE_DRAFT]),
            float(st.session_state[SCORE_DRAFT]))


def set_rule(rule: str):
    st.session_state[RULE_DRAFT] = rule
    st.session_state[RULE_WIDGET] = rule


def use_rule():
    set_rule(st.session_state[RULE_WIDGET])


def use_value(source_key: str):
    set_value(st.session_state[source_key])


def set_value(value: float):
    value = round(float(value), 1)
    st.session_state[DRAFT] = value
    st.session_state[SLIDER] = value
    st.session_state[NUMBER] = value


def use_share(source_key: str):
    set_share(st.session_state[source_key])


def set_share(area: float):
    area = round(float(area), 2)
    st.session_state[SHARE_DRAFT] = area
    st.session_state[SHARE_SLIDER] = min(SHARE_SLIDER_MAX, area)  # to the hundredth: the slider shows the cutoff
    st.session_state[SHARE_NUMBER] = area


def use_score(source_key: str):
    set_score(st.session_state[source_key])


def set_score(score: float):
    score = round(min(1.0, max(0.0, float(score))), 2)
    st.session_state[SCORE_DRAFT] = score
    st.session_state[SCORE_SLIDER] = score
    st.session_state[SCORE_NUMBER] = score


# -- the rule ---------------------------------------------------------------------------------


def rule_control():
    st.session_state.setdefault(RULE_WIDGET, st.session_state[RULE_DRAFT])
    st.segmented_control("Decision rule", list(views.RULE_LABELS), format_func=views.RULE_LABELS.get,
                         required=True, key=RULE_WIDGET, on_change=use_rule,
                         help="Picture rule: the default, from the picture share and ink tone. σ only: the "
                              "original method. Learned from overrides: the model fitted on your decisions.")


def explain(manifest, rule: str, draft: float, share: float):
    suggestions, learned_from = views.learned(manifest) if rule == "model" else (0, 0)
    unfeatured = views.unfeatured_count(manifest) if rule != "sigma" else 0
    lead, _, details = views.rule_explanation(rule, draft, share, suggestions=suggestions,
                                              learned_from=learned_from, unfeatured=unfeatured).partition("\n\n")
    with st.container(border=True):
        st.markdown(lead, help=details or None)  # one line; what the rule measures is in its tooltip
        if rule == "model" and not suggestions:
            st.caption("**Nothing is learned yet**, so every page follows the picture rule: press **Learn from my "
                       "overrides** on Review.")
        if rule != "sigma" and not views.has_features(manifest):
            st.warning("No page has picture features yet (they were scored before features existed), so every "
                       f"page is decided by σ > {draft:g}. Run `python -m curation rescore` to measure them; "
                       "your overrides are kept.", icon=":material/info:")


def show_figures(manifest, draft: float, saved_threshold: float, trying: dict):
    now = views.figures(manifest, draft, saved_threshold, **trying)

    def delta(key, fmt="{:+,}"):
        change = now[key] - now[f"{key}_saved"]
        return fmt.format(change) if change else None

    # Lookups for any cutoff; on a large manifest never a scan: a rule not counted yet waits for the counting job.
    pictures = cutoff_counts.picture_figures(manifest, draft, saved_threshold, **trying,
                                             count=cutoff_counts.small(manifest))
    counting = pictures["kept"] is None or pictures["kept_saved"] is None

    def picture_delta(key):
        if counting:
            return None
        change = pictures[key] - pictures[f"{key}_saved"]
        return f"{change:+,}" if change else None

    def picture_value(key):
        return "…" if pictures[key] is None else f"{pictures[key]:,}"

    columns = st.columns(6)
    columns[0].metric("Kept", f"{now['kept']:,}", delta=delta("kept"),
                      help="Pages the rule and cutoffs being tried keep (the score cutoff too), with your includes "
                           "and excludes; the change is against the saved rule.")
    columns[1].metric("Rejected", f"{now['rejected']:,}", delta=delta("rejected"), delta_color="inverse")
    columns[2].metric("Share removed", f"{now['removed_share']:.0%}",
                      delta=delta("removed_share", "{:+.0%}"), delta_color="off",
                      help="The founding archive lost 73 % of its pages at σ 45 (σ only).")
    columns[3].metric("Pictures kept", picture_value("kept"), delta=picture_delta("kept"),
                      help="Pictures the export cuts apart under the rule being tried: on kept pages, at least the "
                           "picture cutoff (and the score cutoff, for the learned verdict's pictures), or included by "
                           "you. A cutoff can drop pictures and keep every page.")
    columns[4].metric("Pictures left out", picture_value("excluded"), delta=picture_delta("excluded"),
                      delta_color="inverse", help="Pictures found but not exported (deleted ones are not counted).")
    columns[5].metric("Overrides", f"{now['overrides']:,}",
                      help="Pages a curator included or excluded on Review; no rule moves them.")
    if counting:
        counting_progress()


COUNTING = "threshold_counting"  # (the manifest's state, the pid) of the counting job this session launched


def count_in_background(manifest):
    """Launch the counting job (`python -m curation cutoffs`) where a large manifest lacks a rule's counts at
    every cutoff as it is now (the jobs that change them count them before they end; an older manifest, a saved
    score cutoff or a writer outside the jobs leaves them missing): not waited for, once per state and session."""
    if not (cutoff_counts.small(manifest) or cutoff_counts.stored_current(manifest)):
        launch_count(manifest)


def launch_count(manifest):
    """The counting job, unless one runs, an ingest runs (it counts them as it ends), this session launched one
    for the manifest as it is, or every rule's table is at hand without it."""
    now = tuple(cutoff_counts.state(manifest, rule) for rule in cutoff_counts.RULES)
    if ((st.session_state.get(COUNTING) or (None,))[0] == now or common.running_job(manifest) is not None
            or manifest.running_job(cutoff_counts.COUNT_JOB) is not None or not cutoff_counts.needs_count(manifest)):
        return
    process = jobs.launch(pathlib.Path(os.path.abspath(common.db_path())), cutoff_counts.COUNT_JOB)
    st.session_state[COUNTING] = (now, process.pid)


def counting_progress():
    """While the rule being tried (or the saved one) is not counted: the counting job's progress, refreshed; the
    page runs again with the figures once every rule is counted."""

    @st.fragment(run_every=common.POLL_SECONDS)
    def progress():
        with common.open_manifest() as manifest:
            if common.running_job(manifest) is not None:
                st.caption("The pictures kept are counted for every rule when the ingest ends.")
                return
            launch_count(manifest)  # e.g. the curators' changes since the last count touched many documents
            job = manifest.running_job(cutoff_counts.COUNT_JOB)
            pid = (st.session_state.get(COUNTING) or (None, None))[1]
            if job is None and not (pid and common.process_alive(pid)):
                if not cutoff_counts.needs_count(manifest):
                    st.rerun()  # counted: the figures are a lookup now
                st.caption(f"The pictures kept are not counted yet: the counting job ended without them (its log "
                           f"is in {common.code_span(common.db_path().parent / 'logs')}). Reload the page to count again.")
                return
        done = views.job_progress(job) if job is not None else {"fraction": 0.0, "done": 0, "total": 6}
        st.progress(done["fraction"], text="Counting the pictures each rule keeps at every cutoff (a job, seconds a "
                                           f"million pictures): {done['done']} of {done['total']} parts. The pages "
                                           "above are counted already.")

    progress()


def save_bar(saved: tuple, trying: tuple, scored: bool):
    changed = saved != trying
    buttons = st.container(horizontal=True, vertical_alignment="center")
    buttons.button("Save", type="primary", icon=":material/save:", disabled=not changed or auth.locked(),
                   on_click=save, args=(*trying, scored), key="threshold_save",
                   help=auth.help_for("Store the rule and its cutoffs: Review, Export and the CLI use them."))
    buttons.button("Back to saved", icon=":material/undo:", disabled=not changed, on_click=back, args=(saved,))
    words = describe(*saved, scored=scored)
    if not changed:
        buttons.caption(f"Saved: {words}. Review, Export and the CLI use it.")
    else:
        buttons.caption(f":orange[Not saved:] trying {describe(*trying, scored=scored)}; saved is {words}.")


def describe(rule: str, threshold: float, share: float, score: float, scored: bool = True) -> str:
    """The whole decision in words: the rule and the cutoffs it uses (the score cutoff where pictures carry
    a score)."""
    score_words = f", pictures scored ≥ {score:.2f}" if scored else ""
    if rule == "sigma":
        return f"σ only, σ > {threshold:g}{score_words}"
    picture = f"a picture ≥ {views.square_inches(share)}{score_words}, σ > {threshold:g} without features"
    return f"{views.RULE_LABELS[rule].lower()} ({picture})" if rule == "model" else f"picture rule, {picture}"


def save(rule: str, threshold: float, share: float, score: float, scored: bool):
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest, manifest.recording("setting"):  # one action, undone together
        manifest.threshold = threshold
        manifest.picture_area_min = share
        manifest.picture_score_min = score
        if rule == "model":
            views.use_model(manifest)
        else:
            manifest.rule = rule
    decide_in_background()
    st.toast(f"Saved: {describe(rule, threshold, share, score, scored)}", icon=":material/check:")


def decide_in_background():
    """A rule switch (or an area cutoff's move over many pictures) leaves the pictures' stored decisions stale:
    on a large manifest a job decides them again (`python -m curation decide`), not waited for; the views
    evaluate the rule meanwhile."""
    with common.open_manifest() as manifest:
        if (not picture_decisions.needs_job(manifest)
                or manifest.running_job(picture_decisions.DECIDE_JOB) is not None):
            return
    jobs.launch(pathlib.Path(os.path.abspath(common.db_path())), picture_decisions.DECIDE_JOB)


def back(saved: tuple):
    set_rule(saved[0])
    set_value(saved[1])
    set_share(saved[2])
    set_score(saved[3])


# -- picture area -----------------------------------------------------------------------------


def picture_section(manifest, draft: float, share: float, trying: dict, span, saved):
    st.subheader("Largest picture", help="The area covered by each page's largest picture, in square inches of "
                 "the printed page. " + ("The picture rule keeps pages at or above the cutoff."
                                         if trying["rule"] == "picture" else
                                         "The model's pages without a suggestion follow the picture rule at this "
                                         "cutoff."))
    st.session_state.setdefault(SHARE_SLIDER, min(SHARE_SLIDER_MAX, round(share, 2)))
    st.session_state.setdefault(SHARE_NUMBER, round(share, 2))
    slider_col, number_col = st.columns([4, 1], vertical_alignment="bottom")
    slider_col.slider("Keep pages with a picture of at least", 0.0, SHARE_SLIDER_MAX,
                      help="Square inches of the printed page: a cartoon or plate covers 10 and more, a stock cut "
                           "about 1. Raise it to leave out small stock cuts.", step=0.01, format="%.2f sq in", key=SHARE_SLIDER,
                      on_change=use_share, args=(SHARE_SLIDER,))
    number_col.number_input("Picture cutoff (sq in)", 0.0, 1000.0, step=0.5, format="%.2f", key=SHARE_NUMBER,
                            on_change=use_share, args=(SHARE_NUMBER,))
    log_count = st.toggle("Log count", value=True, key="picture_log",
                          help="Text pages pile up at no picture: on a log count the few plates stay visible.")
    hist = views.picture_histogram(manifest, draft, **trying)
    if hist is None:
        st.caption("No page has picture features to draw.")
        return
    data = pd.DataFrame(hist.rows())
    scale = alt.Scale(type="symlog") if log_count else alt.Scale()
    bars = alt.Chart(data).mark_bar(binSpacing=0).encode(
        x=alt.X("start:Q", title="largest picture, sq in (log scale; the first bar holds pages with none)",
                scale=alt.Scale(type="log", domain=[views.PICTURE_FLOOR, views.PICTURE_CEILING], nice=False),
                axis=alt.Axis(format="~g", values=[0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000])),
        x2="end:Q",
        y=alt.Y("sum(pages):Q", title="pages", scale=scale, stack="zero"),
        color=decision_colors(),
        order=alt.Order("decision:N", sort="ascending"),
        tooltip=[alt.Tooltip("start:Q", title="sq in from", format=".2g"),
                 alt.Tooltip("end:Q", title="sq in to", format=".2g"),
                 "decision:N", alt.Tooltip("sum(pages):Q", title="pages")],
    )
    st.altair_chart((bars + cut_rule(max(share, views.PICTURE_FLOOR), f"cutoff {views.square_inches(share)}"))
                    .properties(height=260),
                    width="stretch")


# -- the learned verdict's score ------------------------------------------------------------


def score_section(manifest, score: float, saved_score: float):
    st.subheader("Picture score", help="The learned verdict's probability that a candidate is a picture "
                 "(ingest with **Pictures found by** the learned verdict). A picture it scored under the cutoff "
                 "does not count, under every rule, unless you included it or redrew its box; ingest keeps "
                 "candidates down to 0.05, so a lower cutoff shows what it would add.")
    hist = views.score_histogram(manifest, score)
    if hist is None:
        st.caption("No picture carries a score: this manifest's pictures were found by the page analysis (the "
                   "rule-based finder), which gives none. Ingest or rescore with the learned verdict for a score "
                   "cutoff.")
        return
    for key in (SCORE_SLIDER, SCORE_NUMBER):
        st.session_state.setdefault(key, score)
    slider_col, number_col = st.columns([4, 1], vertical_alignment="bottom")
    slider_col.slider("Count pictures scored at least", 0.0, 1.0, step=0.01, format="%.2f", key=SCORE_SLIDER,
                      on_change=use_score, args=(SCORE_SLIDER,),
                      help="Lower it to take in candidates the verdict was unsure of; raise it to drop doubtful ones.")
    number_col.number_input("Score cutoff", 0.0, 1.0, step=0.05, format="%.2f", key=SCORE_NUMBER,
                            on_change=use_score, args=(SCORE_NUMBER,))
    counted, under = int(hist.admitted.sum()), int(hist.dropped.sum())
    st.caption(f"At {score:.2f}: **{counted:,}** scored pictures counted, **{under:,}** under the cutoff"
               + ("" if score == saved_score else f" (saved {saved_score:.2f})")
               + ". The pages and pictures kept above follow it before you save.")
    data = pd.DataFrame(hist.rows())
    bars = alt.Chart(data).mark_bar(binSpacing=0).encode(
        x=alt.X("start:Q", title="learned verdict's score", scale=alt.Scale(domain=[0, 1], nice=False)),
        x2="end:Q",
        y=alt.Y("sum(pictures):Q", title="pictures", stack="zero"),
        color=alt.Color("decision:N", title=None, scale=alt.Scale(domain=["counted", "under the cutoff"],
                                                                  range=[KEPT_COLOR, REJECTED_COLOR])),
        order=alt.Order("decision:N", sort="ascending"),
        tooltip=[alt.Tooltip("start:Q", title="score from", format=".2f"),
                 alt.Tooltip("end:Q", title="score to", format=".2f"),
                 "decision:N", alt.Tooltip("sum(pictures):Q", title="pictures")],
    )
    st.altair_chart((bars + cut_rule(score, f"cutoff {score:.2f}")).properties(height=220), width="stretch")


# -- σ ----------------------------------------------------------------------------------------


def sigma_section(manifest, draft: float, share: float, trying: dict, span, saved):
    rule = trying["rule"]
    st.subheader("σ, the original method's score", help=(
        "The spread of each page's grey levels at 144 dpi: text columns around 15–30, engravings at 50–90. "
        + ("σ only keeps pages above the cutoff." if rule == "sigma" else
           "Under this rule the σ cutoff decides only pages without picture features; it is shown so you can "
           "compare with the original method.")))
    top = float(max(100, math.ceil(span[1]) + 1, math.ceil(saved[1]) + 1))
    for key in (SLIDER, NUMBER):
        st.session_state.setdefault(key, draft)
    slider_col, number_col = st.columns([4, 1], vertical_alignment="bottom")
    slider_col.slider("Keep pages whose σ is above", 0.0, top, step=0.1, format="%.1f", key=SLIDER,
                      on_change=use_value, args=(SLIDER,))
    number_col.number_input("σ cutoff", 0.0, top, step=0.5, format="%.1f", key=NUMBER,
                            on_change=use_value, args=(NUMBER,))
    st.button("Suggest a σ cutoff", icon=":material/auto_awesome:", on_click=suggest, args=(rule,),
              key="threshold_suggest", help="Propose a cutoff for σ only from the σ distribution alone (Otsu's "
                                            "method)." + ("" if rule == "sigma" else " It is the σ only rule's: "
                                                          "trying it switches to that rule."))
    show_suggestion(rule)
    show_histogram(manifest, draft, trying)


def suggest(rule: str):
    """Otsu's cutoff is σ only's: under that rule it becomes the draft; under another it is only shown, with a
    button to try σ only at it, so the active rule's σ fallback never changes behind the curator's back."""
    with common.open_manifest() as manifest:
        suggestion = views.suggest_threshold(manifest, rule="sigma")
    st.session_state["threshold_suggestion"] = suggestion
    if suggestion is not None and rule == "sigma":
        set_value(suggestion.threshold)


def try_sigma_only(threshold: float):
    set_rule("sigma")
    set_value(threshold)


def show_suggestion(rule: str):
    suggestion = st.session_state.get("threshold_suggestion")
    if suggestion is None:
        return
    total = suggestion.kept + suggestion.rejected
    if rule == "sigma":
        st.info(f"Suggested **σ > {suggestion.threshold:g}**: keeps {suggestion.kept:,} of {total:,} pages.",
                icon=":material/auto_awesome:")  # how it was found: the button's tooltip
        return
    st.info(f"For σ only: **σ > {suggestion.threshold:g}** would keep {suggestion.kept:,} of {total:,} pages. "
            "The rule you are trying is unchanged.", icon=":material/auto_awesome:")
    st.button(f"Try σ only at σ > {suggestion.threshold:g}", key="threshold_try_sigma", on_click=try_sigma_only,
              args=(suggestion.threshold,), icon=":material/swap_horiz:")


def show_histogram(manifest, draft: float, trying: dict):
    options = st.container(horizontal=True, vertical_alignment="bottom")
    bins = options.slider("Bins", 10, 200, 60, step=5, key="threshold_bins", width=260)
    log_count = options.toggle("Log count", key="threshold_log")
    hist = views.histogram(manifest, draft, bins=bins, **trying)
    data = pd.DataFrame(hist.rows())
    scale = alt.Scale(type="symlog") if log_count else alt.Scale()
    bars = alt.Chart(data).mark_bar(binSpacing=0).encode(
        x=alt.X("start:Q", title="σ (grey-level spread at 144 dpi)"),
        x2="end:Q",
        y=alt.Y("sum(pages):Q", title="pages", scale=scale, stack="zero"),
        color=decision_colors(),
        order=alt.Order("decision:N", sort="ascending"),
        tooltip=[alt.Tooltip("start:Q", title="σ from", format=".1f"),
                 alt.Tooltip("end:Q", title="σ to", format=".1f"),
                 "decision:N", alt.Tooltip("sum(pages):Q", title="pages")],
    )
    label = f"cutoff {draft:g}" if trying["rule"] == "sigma" else f"σ cutoff {draft:g} (σ only)"
    st.altair_chart((bars + cut_rule(draft, label)).properties(height=300), width="stretch")
    if trying["rule"] != "sigma":
        st.caption("Colours: the rule being tried.", help="Kept pages below the σ cutoff are the faded engravings "
                   "σ misses, rejected ones above it the text pages σ is fooled by.")


def decision_colors():
    return alt.Color("decision:N", title=None,
                     scale=alt.Scale(domain=["kept", "rejected"], range=[KEPT_COLOR, REJECTED_COLOR]))


def cut_rule(value: float, text: str):
    cut = pd.DataFrame({"at": [value], "label": [text]})
    rule = alt.Chart(cut).mark_rule(color=CUT_COLOR, strokeWidth=2).encode(x="at:Q")
    label = alt.Chart(cut).mark_text(color=CUT_COLOR, align="left", dx=4, dy=-6, baseline="bottom").encode(
        x="at:Q", y=alt.value(0), text="label:N")
    return rule + label


# -- the pages at the edge --------------------------------------------------------------------

STRIP_TITLES = {
    "sigma": ("Just below the σ cutoff: removed", "Just above it: kept"),
    "picture_area": ("Just under the picture cutoff: removed", "Just over it: kept"),
    "confidence": ("Rejected by the model, least sure first", "Kept by the model, least sure first"),
}


def show_borderline(manifest, draft: float, trying: dict):
    edge = views.borderline(manifest, draft, STRIP, rule=trying["rule"],
                            picture_area_min=trying["picture_area_min"])
    thumbs = views.edge_thumbnails(manifest, edge.below + edge.above, edge.measure)
    st.subheader("At the edge", help="What this rule costs: the pages nearest its cut on each side, with what "
                 "decides them (an override, or the rule). Overrule them on Review.")
    below, above = STRIP_TITLES[edge.measure]
    strip(below, edge.below, thumbs, edge.measure, draft, expected=0)
    strip(above, edge.above, thumbs, edge.measure, draft, expected=1)


def strip(title: str, rows: list[dict], thumbs: dict, measure: str, threshold: float, expected: int):
    st.markdown(f"**{title}**")
    if not rows:
        st.caption("No pages on this side.")
        return
    cells = st.grid(STRIP, min_column_width=EDGE_THUMB)  # wraps to fewer a row: a thumbnail never shrinks below
    for row in rows:
        with cells.cell():
            image = thumbs.get((row["doc_id"], row["page"]))
            if image:
                st.image(image, width="stretch")
            else:
                st.caption(":grey[No thumbnail]")
            st.caption(f"{edge_value(row, measure, threshold)}{edge_note(row, expected)}  \n"
                       f"{common.escape_markdown(pathlib.Path(row['doc']).stem)} p. {page_number(row['page'])}")


def edge_value(row: dict, measure: str, threshold: float) -> str:
    sigma = views.sigma_beside(row["sigma"], threshold)  # never reads as the cutoff it is not
    if measure == "picture_area":
        return f"picture {views.square_inches(row['picture_area'] or 0)} · {sigma}"
    if measure == "confidence":
        return f"model {math.floor(row['confidence'] * 100)}% sure · {sigma}"
    return sigma


def edge_note(row: dict, expected: int) -> str:
    if row["override"] is not None:
        return " · :violet[included]" if row["override"] else " · :violet[excluded]"
    if row["keep"] != expected:  # the cut is on one measure, the rule may look at another (ink tone)
        return " · :orange[kept]" if row["keep"] else " · :orange[rejected]"
    return ""


common.run_page(main)
