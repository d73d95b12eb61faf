"""A bulk action of Review (pages or pictures): done at once on a small view, launched as a job on a large one
(`python -m curation bulk`), whose progress and Stop show above the grid until it ends.

The click only launches the job's process, so its script run returns at once; the job registers itself in the
manifest and this panel polls it. Stopped or killed, what it wrote stays one action that Undo takes back.
"""

from __future__ import annotations

import os
import pathlib

import streamlit as st

from curation import views
from curation.manifest.store import Manifest
from curation.runs import jobs
from curation.views import bulk
from pages.components import auth, common

POLL_SECONDS = 1.0
LAUNCHED = "bulk_job_launched"  # the pid of the job this session launched, until it ends
OUTCOME = "bulk_job_outcome"  # the last job's outcome, shown once


def apply(manifest: Manifest, action: bulk.Bulk, count: int, done: str) -> str:
    """Do `action` to a view of `count` pages or pictures: at once (returns `done` with {done} filled in) or, on
    a large view, as a job (returns what happens now)."""
    if not bulk.is_job(count):
        return done.format(done=bulk.run(manifest, action))
    launched = st.session_state.get(LAUNCHED)  # started from here, perhaps not registered yet
    if manifest.running_job(bulk.JOB) is not None or (launched and common.process_alive(launched)):
        return "Another bulk action is running: wait for it to end (or stop it) and try again."
    process = jobs.launch(pathlib.Path(os.path.abspath(common.db_path())), bulk.JOB, "--spec", action.to_json())
    st.session_state[LAUNCHED] = process.pid  # not waited for: the job registers itself
    return (f"Started: {count:,} {action.unit} are written a part at a time; the progress is above the grid. "
            "Undo takes the whole action back.")


def progress() -> None:
    """The running bulk job's progress with Stop, refreshing itself; when it ends, the page runs again."""
    with common.open_manifest() as manifest:
        job = manifest.running_job(bulk.JOB)
        if job is None:
            bulk.settle(manifest)  # one killed: its action says what it wrote
    if job is not None:
        st.session_state[LAUNCHED] = job["pid"]
    if OUTCOME in st.session_state:
        show_outcome(st.session_state.pop(OUTCOME))
    if not st.session_state.get(LAUNCHED):
        return

    @st.fragment(run_every=POLL_SECONDS)
    def panel():
        pid = st.session_state.get(LAUNCHED)
        with common.open_manifest() as manifest:
            job = manifest.latest_job(bulk.JOB)
        if job is not None and job["pid"] == pid and job["status"] != "running":
            st.session_state.pop(LAUNCHED, None)  # it ended: the counts and the grid follow it
            st.session_state[OUTCOME] = dict(job)
            st.rerun()
        if job is not None and job["pid"] == pid:
            show_running(job)
        elif common.process_alive(pid):
            st.progress(0.0, text="Bulk action: starting…")
        else:
            st.session_state.pop(LAUNCHED, None)
            st.error(f"The bulk action ended before it began. Its log is in {common.code_span(common.db_path().parent / 'logs')}.")

    panel()


def show_running(job) -> None:
    done = views.job_progress(job)
    st.progress(done["fraction"], text=f"Bulk action: {common.escape_markdown(job['message'] or '')} · "
                                       f"{done['done']:,} of {done['total']:,} written")
    if job["stop_requested"]:
        st.caption("Stopping after the part in hand… Undo takes back what was written.")
    else:
        st.button("Stop", icon=":material/stop_circle:", key=f"stop-bulk-{job['id']}", on_click=common.stop_job,
                  args=(job["id"],), disabled=auth.locked(), help=auth.help_for())


def show_outcome(job: dict) -> None:
    message = common.escape_markdown(job["message"] or "")
    if job["status"] == "done":
        st.success(f"Bulk action finished: {message}. Undo takes it back in one step.", icon=":material/check_circle:")
    elif job["status"] in ("stopped", "interrupted"):
        st.info(f"Bulk action stopped: {message}.", icon=":material/pause_circle:")
    else:
        st.error(f"Bulk action failed: {message or 'no reason was recorded'}. The log is in "
                 f"{common.code_span(common.db_path().parent / 'logs')}.", icon=":material/error:")
