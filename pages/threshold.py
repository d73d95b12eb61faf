"""Threshold: the σ histogram, the cutoff, live figures, a suggestion and the pages at the edge."""

import math
import pathlib

import altair as alt
import pandas as pd
import streamlit as st

from curation import views
from pages import _common as common

DRAFT = "threshold_draft"  # the value being tried; survives page switches, unlike widget state
SLIDER, NUMBER = "threshold_slider", "threshold_number"
KEPT_COLOR, REJECTED_COLOR, CUT_COLOR = "#3f7f4f", "#c9bfae", "#8a4b2a"
STRIP = 8


def main():
    st.title("Threshold")
    st.caption("A page is kept when its σ is above the cutoff, unless a curator overruled it on Review. "
               "Nothing changes until you save.")
    manifest = common.require_manifest()
    with manifest:
        span = views.sigma_range(manifest)
        if span is None:
            st.info("No page is scored yet: ingest an archive first.")
            common.link("pages/ingest.py", "Ingest", ":material/upload_file:")
            return
        saved = manifest.threshold
        draft = controls(saved, span)
        show_figures(manifest, draft, saved)
        show_suggestion()
        show_histogram(manifest, draft)
        show_borderline(manifest, draft)


def controls(saved: float, span: tuple[float, float]) -> float:
    st.session_state.setdefault(DRAFT, saved)
    for key in (SLIDER, NUMBER):
        st.session_state.setdefault(key, st.session_state[DRAFT])
    top = float(max(100, math.ceil(span[1]) + 1, math.ceil(saved) + 1))
    slider_col, number_col = st.columns([4, 1], vertical_alignment="bottom")
    slider_col.slider("min_variance: keep pages whose σ is above", 0.0, top, step=0.1, format="%.1f", key=SLIDER,
                      on_change=use_value, args=(SLIDER,))
    number_col.number_input("σ cutoff", 0.0, top, step=0.5, format="%.1f", key=NUMBER,
                            on_change=use_value, args=(NUMBER,))
    draft = float(st.session_state[DRAFT])
    buttons = st.container(horizontal=True)
    buttons.button("Save threshold", type="primary", icon=":material/save:", disabled=draft == saved,
                   on_click=save, args=(draft,))
    buttons.button("Suggest", icon=":material/auto_awesome:", on_click=suggest,
                   help="Propose a cutoff from the σ distribution alone (Otsu's method).")
    buttons.button("Back to saved", icon=":material/undo:", disabled=draft == saved, on_click=set_value,
                   args=(saved,))
    if draft == saved:
        buttons.caption(f"Saved: σ > {saved:g}. Review, Export and the CLI use it.")
    else:
        buttons.caption(f":orange[Not saved:] trying σ > {draft:g}; the saved cutoff is {saved:g}.")
    return draft


def use_value(source_key: str):
    set_value(st.session_state[source_key])


def set_value(value: float):
    value = round(float(value), 1)
    st.session_state[DRAFT] = value
    st.session_state[SLIDER] = value
    st.session_state[NUMBER] = value


def save(value: float):
    with common.open_manifest() as manifest:
        manifest.threshold = value
    st.toast(f"Saved the cutoff: σ > {value:g}", icon=":material/check:")


def suggest():
    with common.open_manifest() as manifest:
        suggestion = views.suggest_threshold(manifest)
    st.session_state["threshold_suggestion"] = suggestion
    if suggestion is not None:
        set_value(suggestion.threshold)


def show_suggestion():
    suggestion = st.session_state.get("threshold_suggestion")
    if suggestion is None:
        return
    total = suggestion.kept + suggestion.rejected
    st.info(f"**Suggested: σ > {suggestion.threshold:g}**, keeping {suggestion.kept:,} and removing "
            f"{suggestion.rejected:,} of {total:,} pages ({suggestion.rejected / total:.0%}). {suggestion.how}",
            icon=":material/auto_awesome:")


def show_figures(manifest, draft: float, saved: float):
    now = views.figures(manifest, draft, saved)

    def delta(key, fmt="{:+,}"):
        change = now[key] - now[f"{key}_saved"]
        return fmt.format(change) if change else None

    columns = st.columns(4)
    columns[0].metric("Kept", f"{now['kept']:,}", delta=delta("kept"))
    columns[1].metric("Rejected", f"{now['rejected']:,}", delta=delta("rejected"), delta_color="inverse")
    columns[2].metric("Share removed", f"{now['removed_share']:.0%}",
                      delta=delta("removed_share", "{:+.0%}"), delta_color="off",
                      help="The founding archive lost 73 % of its pages at σ 45.")
    columns[3].metric("Overrides", f"{now['overrides']:,}",
                      help="Pages a curator included or excluded on Review; the cutoff does not move them.")


def show_histogram(manifest, draft: float):
    options = st.container(horizontal=True, vertical_alignment="bottom")
    bins = options.slider("Bins", 10, 200, 60, step=5, key="threshold_bins", width=260)
    log_count = options.toggle("Log count", key="threshold_log")
    hist = views.histogram(manifest, draft, bins=bins)
    data = pd.DataFrame(hist.rows())
    scale = alt.Scale(type="symlog") if log_count else alt.Scale()
    bars = alt.Chart(data).mark_bar(binSpacing=0).encode(
        x=alt.X("start:Q", title="σ (grey-level spread at 144 dpi)"),
        x2="end:Q",
        y=alt.Y("sum(pages):Q", title="pages", scale=scale, stack="zero"),
        color=alt.Color("decision:N", title=None,
                        scale=alt.Scale(domain=["kept", "rejected"], range=[KEPT_COLOR, REJECTED_COLOR])),
        order=alt.Order("decision:N", sort="ascending"),
        tooltip=[alt.Tooltip("start:Q", title="σ from", format=".1f"),
                 alt.Tooltip("end:Q", title="σ to", format=".1f"),
                 "decision:N", alt.Tooltip("sum(pages):Q", title="pages")],
    )
    cut = pd.DataFrame({"sigma": [draft], "label": [f"cutoff {draft:g}"]})
    rule = alt.Chart(cut).mark_rule(color=CUT_COLOR, strokeWidth=2).encode(x="sigma:Q")
    label = alt.Chart(cut).mark_text(color=CUT_COLOR, align="left", dx=4, dy=-6, baseline="bottom").encode(
        x="sigma:Q", y=alt.value(0), text="label:N")
    st.altair_chart((bars + rule + label).properties(height=300), width="stretch")


def show_borderline(manifest, draft: float):
    below, above = views.borderline(manifest, draft, STRIP)
    keys = [(row["doc_id"], row["page"]) for row in below + above]
    thumbs = views.thumbnails(manifest, keys)
    st.subheader("At the edge")
    st.caption("What this cutoff costs: the pages just below it are removed, those just above are kept "
               "(unless overridden). Overrule them on Review.")
    strip("Just below: removed", below, thumbs)
    strip("Just above: kept", above, thumbs)


def strip(title: str, rows: list[dict], thumbs: dict):
    st.markdown(f"**{title}**")
    if not rows:
        st.caption("No pages on this side.")
        return
    columns = st.columns(STRIP)
    for column, row in zip(columns, rows):
        with column:
            image = thumbs.get((row["doc_id"], row["page"]))
            if image:
                st.image(image, width="stretch")
            note = ""
            if row["override"] is not None:
                note = " · :violet[included]" if row["override"] else " · :violet[excluded]"
            st.caption(f"σ {row['sigma']:.1f}{note}  \n{pathlib.Path(row['doc']).stem} p. {row['page'] + 1}")


common.run_page(main)
