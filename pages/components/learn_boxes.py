"""Learn from my boxes, on Review's Pictures view and on Threshold: the button that starts the job
(curation.runs.learn_boxes, as `python -m curation learn --boxes`), its live progress with Stop, its outcome (the
held-out pages' figures before and after, the pages whose pictures were found again) and Undo.

The job runs in a process of its own and writes its progress to the manifest; this panel only launches and polls
it."""

from __future__ import annotations

import streamlit as st

from curation import views
from curation.manifest import finders, history
from curation.runs.learn_boxes import KIND, readiness, undo_last
from pages.components import auth
from pages.components import common

RUNNING_KEY = "learn_boxes_was_running"
HELP = ("Teaches the picture finder this archive's pictures from the boxes you fixed, added and deleted: it learns "
        "from three quarters of those pages and is checked on the rest. Only if it finds their pictures better is "
        "it kept, and the pictures of the pages nobody touched are found again with it; your boxes and decisions "
        "stay. A few minutes at most; Undo puts the previous finder back.")


def panel(where: str) -> None:
    """The button, and the latest job's progress or outcome; `where` tells the pages' widgets apart."""
    with common.open_manifest() as manifest:
        running = manifest.running_job(KIND) is not None
        ready = readiness(manifest)
    st.caption(common.escape_markdown(ready.summary))
    if st.button("Learn from my boxes", icon=":material/model_training:", key=f"learn-boxes-{where}",
                 disabled=running or auth.locked() or ready.blocked, help=auth.help_for(HELP)):
        common.start_job(KIND, "--boxes", running_key=RUNNING_KEY, command="learn")
    common.latest_job_panel(KIND, RUNNING_KEY, running, lambda job: show_job(job, where))


def show_job(job, where: str) -> None:
    if job["status"] == "running":
        with st.container(border=True):
            progress = views.job_progress(job)
            step = common.escape_markdown(job["message"] or "starting")
            common.job_progress_bar(job, f"Learning from your boxes: {step} ({progress['done']:,} of "
                                         f"{progress['total']:,})", "Stopping… nothing is kept unless pages were "
                                                                    "already found again (Undo takes them back).")
        return
    # The message names figures and pages only, but is shown escaped as every job's is.
    message = common.escape_markdown((job["message"] or "no reason was recorded").rstrip(". "))
    finished = (job["finished_at"] or "")[:19].replace("T", " ")
    with common.open_manifest() as manifest:
        learned = history.last_undoable(manifest.conn, None, ("finder",))
        in_use = finders.current_version(manifest.conn) is not None or finders.judge(manifest.conn) is not None
    if job["status"] == "done" and learned is not None and in_use:
        st.success(f"Learned from your boxes {finished} UTC: {message}.", icon=":material/check_circle:")
    elif job["status"] == "done":
        st.info(f"Learn from my boxes {finished} UTC: {message}.", icon=":material/info:")
    elif job["status"] in ("stopped", "interrupted"):
        st.info(f"Learn from my boxes stopped {finished} UTC: {message}.", icon=":material/pause_circle:")
    else:
        st.error(f"Learn from my boxes failed: {message}. The log is in {common.code_span(common.db_path().parent / 'logs')}.",
                 icon=":material/error:")
    if learned is not None and auth.can_curate() and st.button(
            "Undo learning", icon=":material/undo:", key=f"learn-boxes-undo-{where}-{learned['id']}",
            help="Puts the previous finder back, and the pictures it had found on the pages found again (a page "
                 "changed since keeps that change)."):
        undo()
        st.rerun(scope="app")  # the panel is a fragment: the whole page shows the pictures as they are again


def undo() -> None:
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        try:
            done = undo_last(manifest)
        except history.UndoError as exc:
            common.notify(common.escape_markdown(exc), ":material/error:")
            return
    common.notify(f"Undone: {common.escape_markdown(done['description'].removeprefix('undid '))}", ":material/undo:")
