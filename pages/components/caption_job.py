"""The caption job's panel, drawn on the Review page: Start and Stop, its live progress and the time
per picture, and how to install the captioning model when it is missing.

The job runs in its own process (`python -m curation caption`) and writes its progress to the
manifest; this panel only launches it and polls. Which model folder it uses is the server's
configuration ($CAPTIONER_MODEL_DIR or the models folder), never something the browser sends.
"""

from __future__ import annotations


import streamlit as st

from curation import views
from curation.captions.job import KIND
from curation.manifest.store import Manifest
from inference.captioner import MODEL_DIR_ENV, REPO, captioner_status
from pages.components import auth, common

RUNNING_KEY = "caption_job_was_running"
SCOPES = {"Kept pictures": [], "All pictures": ["--all"]}


def caption_panel(manifest: Manifest) -> None:
    """The caption job: the model's state, the controls to start it, and the running or last job."""
    running = manifest.running_job(KIND) is not None
    with st.container(border=True):
        st.markdown("**Captions by a model**")
        st.caption(f"A captioning model ({REPO}) describes each picture in a paragraph, kept as the picture's "
                   "model caption beside the legend and your own caption, which it never replaces.")
        model = captioner_status()
        show_model(model)
        job_progress(running)  # the last run's outcome above Start, where it is seen
        if not running and not model["problem"]:
            start_controls()


def show_model(model: dict) -> None:
    folder = common.code_span(model["folder"])
    if model["problem"]:
        st.error(f"The captioning model in {folder} cannot be used: {common.escape_markdown(model['problem'])}",
                 icon=":material/error:")
    elif not model["installed"]:
        st.warning(f"**The captioning model is not installed** in {folder}. Start downloads it first (about 0.5 GB "
                   "from the Hugging Face Hub), which needs this server to reach the internet. Without internet, "
                   "run `python -m inference install-captioner --model-dir DIR` on a machine with internet and "
                   f"copy DIR to {folder} (or set `${MODEL_DIR_ENV}` to it).", icon=":material/download:")
    else:
        st.caption(f"Model: {common.escape_markdown(model['name'])} in {folder}")


def start_controls() -> None:
    # One row that wraps as a whole, each control at its own width: no label is cut short.
    bar = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    scope = bar.radio("Pictures", list(SCOPES), horizontal=True, key="caption_scope", width="content",
                      disabled=auth.locked(), help=auth.help_for("Kept: the kept pictures of kept pages."))
    overwrite = bar.checkbox("Caption again what this model captioned", key="caption_overwrite", width="content",
                             disabled=auth.locked(), help=auth.help_for(
                                 "Otherwise a run skips the pictures this model has captioned, so Start "
                                 "after a stop resumes. Your own captions are never touched."))
    if bar.button("Start", type="primary", icon=":material/subtitles:", key="caption_start", width="content",
                  disabled=auth.locked(), help=auth.help_for()):
        common.start_job(KIND, *SCOPES[scope], *(["--overwrite"] if overwrite else []), running_key=RUNNING_KEY)


def job_progress(running: bool) -> None:
    """The running job's progress, refreshing itself, or the last job's outcome."""
    if running:
        st.session_state[RUNNING_KEY] = True
    # A job that ends redraws the page: Start comes back, and the captions show on the cards.
    common.latest_job_panel(KIND, RUNNING_KEY, running, show_job)


def show_job(job) -> None:
    if job["status"] == "running":
        progress = views.job_progress(job)
        speed = f"{1 / job['rate']:.1f} s per picture" if job["rate"] else "loading the model…"
        common.job_progress_bar(job, f"Captioning: {progress['done']:,} of {progress['total']:,} pictures · {speed}",
                           "Stopping after the pictures in hand… Start resumes where it stopped.",
                           # what the job says while it runs: downloading the model first
                           common.escape_markdown(job["message"]) if job["message"] else None)
        return
    # It may quote a document's name or an error; its own full stop goes, as each line below ends in one.
    message = common.escape_markdown((job["message"] or "").rstrip(". "))
    finished = (job["finished_at"] or "")[:19].replace("T", " ")
    if job["status"] == "done":
        st.success(f"Captioning finished {finished} UTC: {message}.", icon=":material/check_circle:")
    elif job["status"] in ("stopped", "interrupted"):
        st.info(f"Captioning stopped {finished} UTC: {message}. Start resumes where it stopped.",
                icon=":material/pause_circle:")
    else:
        st.error(f"Captioning failed: {message or 'no reason was recorded'}. The log is in "
                 f"{common.code_span(common.db_path().parent / 'logs')}.", icon=":material/error:")
