"""Home: what the manifest holds, what to do next, and a sample archive to try it all."""

import streamlit as st

from curation import views
from curation.runs import sample
from curation.views import cutoff_counts
from pages.components import auth, common


def main():
    st.title("Curation dashboard")
    st.caption("Scanned periodical pages in, a checked LoRA training set out: score every page and find its "
               "pictures, choose the rule that decides what to keep, overrule single pages and pictures, export "
               "the pictures.")
    auth.access_notice()
    common.job_panel(show_finished=False, body=live_figures)  # the figures refresh with the job's progress
    manifest = common.open_manifest()
    if manifest is None:
        welcome()
        return
    with manifest:
        summary = manifest.summary(sigma=False)
        running = common.running_job(manifest) is not None
        if sum(summary["documents"].values()) == 0:
            welcome(running)
            return
        missing = views.missing_sources(manifest)
        if missing:
            st.warning(f"{len(missing)} source PDF(s) are no longer where they were ingested, for example "
                       f"{common.code_span(missing[0])}. Their pages can still be reviewed from thumbnails, but not "
                       "opened large or exported; ingest them again from their new place.", icon=":material/warning:")
        st.subheader("Next")
        rule_saved = any(manifest.get_setting(key) is not None for key in ("rule", "threshold", "picture_area_min"))
        steps = views.next_steps(summary, rule_saved, running, picture_area_min=manifest.picture_area_min,
                                 suggestions=views.learned(manifest)[0], pictures_kept=kept_pictures(manifest))
        for step in steps:
            common.link(step.page, step.label, ":material/arrow_forward:")
            st.caption(step.why)
        latest_changes(views.latest_changes(manifest))
        if not sample.sample_folder(common.db_path()).exists():
            with st.expander("Try the sample archive"):
                sample_button(running)


def kept_pictures(manifest) -> int | None:
    """The pictures the saved decision keeps: what the export cuts apart (the stored counts, milliseconds)."""
    try:
        return cutoff_counts.picture_figures(manifest, None)["kept"]
    except Exception:  # an older manifest without the counts: the page still says what it can
        common.log.exception("counting the kept pictures failed")
        return None


def live_figures(manifest):
    """What the manifest holds, drawn inside the job panel: while pages are scored it grows with them."""
    summary = manifest.summary(sigma=False)
    if sum(summary["documents"].values()) == 0:
        return
    show_summary(summary, views.rule_summary(summary["rule"], summary["threshold"], manifest.picture_area_min),
                 views.picture_override_count(manifest), kept_pictures(manifest))


def welcome(running: bool = False):
    st.subheader("Start here")
    st.markdown(
        "1. **Ingest** archives of scanned PDFs: every page gets σ, the spread of its grey levels (the original "
        "method's score), and its pictures: engravings, cuts and plates found apart from the text, each with "
        "its area in square inches of the printed page.\n"
        "2. **Threshold**: choose the rule that decides: the picture rule (the default: a page is kept when its "
        "largest picture covers at least the cutoff, 2 sq in to start with), σ only (the original method) or a "
        "model learned from your decisions, and its cutoff.\n"
        "3. **Review** the pages the rule gets wrong and overrule them one by one or in bulk; caption them; let "
        "the model learn from your overrides and check where it disagrees.\n"
        "4. **Export** the kept pictures as a training set, each cut apart as its own image (or whole pages)."
    )
    left, right = st.columns(2)
    with left, st.container(border=True):
        st.markdown("**No PDFs at hand?**")
        st.caption(f"Writes {sample.DOCUMENTS} synthetic periodical issues ({sample.DOCUMENTS * sample.PAGES} pages: "
                   "text columns, engravings, mixed pages and a few hard cases) into "
                   f"{common.code_span(sample.sample_folder(common.db_path()))} and ingests them. About half a minute.")
        sample_button(running)
    with right, st.container(border=True):
        st.markdown("**Your own archive**")
        st.caption("Upload PDFs, or give a folder on the server.")
        common.link("pages/ingest.py", "Go to Ingest", ":material/upload_file:")


def sample_button(running: bool):
    clicked = st.button("Try a sample archive", type="primary", icon=":material/science:",
                        disabled=running or auth.locked(),
                        help=auth.help_for("A job is running; wait for it to finish." if running else None))
    if not clicked or not auth.require_curator():
        return
    error = common.launch_and_wait(sample.KIND, lambda: sample.launch(common.db_path()))
    if error:
        st.error(error)
    else:
        st.rerun()


def latest_changes(rows: list[dict]):
    """Who did what lately: a table, so names and file names are shown as they are, never as Markdown."""
    if not rows:
        return
    st.subheader("Latest changes")
    st.dataframe(common.pictured_table(rows), hide_index=True)
    st.caption("All of them, and who made each: `python -m curation history`; take one back with "
               "`python -m curation undo`, or Undo on Review.")


def show_summary(summary: dict, rule_words: str, picture_overrides: int = 0, pictures_kept: int | None = None):
    share = summary["rejected"] / summary["pages"] if summary["pages"] else 0
    documents = sum(n for status, n in summary["documents"].items() if status != "replaced")
    columns = st.columns(6)
    columns[0].metric("Documents", f"{documents:,}")
    columns[1].metric("Pages scored", f"{summary['scored']:,}")
    columns[2].metric("Kept", f"{summary['kept']:,}",
                      delta=None if pictures_kept is None else views.count(pictures_kept, "picture"),
                      delta_color="off", delta_arrow="off",
                      help=f"Pages kept by the saved rule ({rule_words}) and your overrides, and the pictures on "
                           "them that the export writes, each as its own image.")
    columns[3].metric("Rejected", f"{summary['rejected']:,}", delta=f"{share:.0%} removed", delta_color="off",
                      delta_arrow="off")
    columns[4].metric("Overrides", f"{summary['overrides'] + picture_overrides:,}",
                      delta=f"{views.count(summary['overrides'], 'page')}, {views.count(picture_overrides, 'picture')}",
                      delta_color="off", delta_arrow="off",
                      help="Pages and pictures you included, excluded, added or redrew on Review.")
    columns[5].metric("Failed pages", f"{summary['failed']:,}")


common.run_page(main)
