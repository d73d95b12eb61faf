"""The picture job's panel on the Ingest page: its live progress with Stop while it runs after an ingest, the
last run's outcome, Resume after a stop, and what to install where it cannot run here.

The job runs in the ingest's own process once ingest is done (or as `python -m curation embed`) and writes its
progress to the manifest; this panel only polls it, and launches `embed` to resume.
"""

from __future__ import annotations


import streamlit as st

from curation import views
from curation.runs.embed import KIND, missing_parts
from pages.components import auth, common

RUNNING_KEY = "picture_job_was_running"
TITLE = "Embedding the pictures"


def picture_job_panel(ingest_running: bool) -> None:
    """The picture job, refreshing itself while it (or the ingest it follows) runs."""
    with common.open_manifest() as manifest:
        wanted = manifest.picture_job
        running = manifest.running_job(KIND) is not None
    if running:
        st.session_state[RUNNING_KEY] = True
    problem = missing_parts() if wanted else None
    if problem:
        st.caption(f"Pictures are not embedded after ingest here: {common.escape_markdown(problem)}")

    common.latest_job_panel(KIND, RUNNING_KEY, running or ingest_running,
                            lambda job: show_job(job, can_resume=not problem and not ingest_running))


def show_job(job, can_resume: bool) -> None:
    if job["status"] == "running":
        with st.container(border=True):
            progress = views.job_progress(job)
            speed = f"{job['rate']:.1f} pictures/s" if job["rate"] else "loading the network…"
            common.job_progress_bar(job, f"{TITLE}: {progress['done']:,} of {progress['total']:,} pictures · {speed}",
                               "Stopping after the pictures in hand… Resume goes on where it stopped.")
        return
    # It may quote a document's name or an error: shown escaped.
    message = common.escape_markdown((job["message"] or "").rstrip(". "))
    finished = (job["finished_at"] or "")[:19].replace("T", " ")
    if job["status"] == "done":
        st.success(f"Pictures embedded {finished} UTC: {message}.", icon=":material/check_circle:")
        return
    if job["status"] in ("stopped", "interrupted"):
        st.info(f"Embedding the pictures stopped {finished} UTC: {message}.", icon=":material/pause_circle:")
    else:
        st.error(f"Embedding the pictures failed: {message or 'no reason was recorded'}. The log is in "
                 f"{common.code_span(common.db_path().parent / 'logs')}.", icon=":material/error:")
    if can_resume and st.button("Resume", icon=":material/play_arrow:", key="embed-resume",
                                disabled=auth.locked(), help=auth.help_for(
                                    "Embeds the pictures that have no embedding yet; those done are kept.")):
        common.start_job(KIND, running_key=RUNNING_KEY)


def picture_job_input(running: bool) -> None:
    """Whether ingest and rescore are followed by the picture job."""
    with common.open_manifest() as manifest:
        saved = manifest.picture_job
    st.toggle("Embed the pictures after ingest", value=saved, key="picture_job", on_change=save_picture_job,
              disabled=running or auth.locked(),
              help=auth.help_for("Each new picture's crop is embedded by a small image network (on the GPU where "
                                 "there is one), for More like this and the manifest's own picture model. Off: "
                                 "ingest ends sooner; `python -m curation embed` does it later."))


def save_picture_job() -> None:
    if not auth.require_curator():
        st.session_state.pop("picture_job", None)
        return
    with common.open_manifest() as manifest:
        manifest.picture_job = bool(st.session_state["picture_job"])
