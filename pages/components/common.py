"""What every dashboard page shares: the open manifest, errors shown as messages, the job panel.

Streamlit code only; the logic it calls lives in curation/.
"""

from __future__ import annotations

import functools
import logging
import os
import pathlib
import sqlite3
from collections.abc import Callable

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from curation import views
from curation.manifest.picture_decisions import DECIDE_JOB
from curation.manifest.store import Manifest, ManifestError
from curation.manifest.store import pid_alive as process_alive  # noqa: F401  a launched job not registered yet
from curation.runs import jobs
from curation.runs.embed import KIND as PICTURE_JOB
from curation.views import bulk
from curation.views.cutoff_counts import COUNT_JOB
from pages.components import auth
# The pages read these as common.<name>, beside the rest of what they share.
from pages.components.escaping import (MAX_NAME_CHARS, MAX_PATH_CHARS, code_span, escape_markdown, pictured,  # noqa: F401
                                       pictured_table)

DEFAULT_DB = "data/manifest.sqlite"
JOB_KINDS = ("sample", "ingest")
OTHER_JOBS = {"export": "images", "caption": "pictures", DECIDE_JOB: "pictures",  # in the sidebar, by what
              bulk.JOB: "written", PICTURE_JOB: "pictures", COUNT_JOB: "parts"}  # they count
POLL_SECONDS = 1.0
log = logging.getLogger("curation.dashboard")


@functools.lru_cache(maxsize=1)
def app_icon():
    """The browser tab's icon, drawn here: a Material icon as page_icon is fetched from fonts.gstatic.com, which an
    offline server's visitors cannot reach (the icons in the page come with Streamlit's bundled font)."""
    from PIL import Image, ImageDraw

    icon = Image.new("RGBA", (64, 64))
    draw = ImageDraw.Draw(icon)
    draw.rounded_rectangle((2, 2, 61, 61), radius=12, fill="#8a4b2a")  # the theme's primary colour
    draw.polygon([(12, 18), (31, 22), (31, 50), (12, 46)], fill="#fdfbf7")  # an open book: two pages
    draw.polygon([(33, 22), (52, 18), (52, 46), (33, 50)], fill="#fdfbf7")
    return icon


def db_path() -> pathlib.Path:
    return pathlib.Path(os.environ.get("CURATION_DB", DEFAULT_DB))


def allowed_roots(documents=()) -> list[pathlib.Path]:
    """The server folders a page may read (the server's configuration: see curation.sources.paths), and
    the folders of `documents` (manifest paths) that a command-line ingest read from outside them."""
    from curation.sources import paths

    manifest = open_manifest()
    try:
        return paths.reading_roots(db_path(), manifest, {os.path.dirname(path) for path in documents})
    finally:
        if manifest is not None:
            manifest.close()


def request_headers() -> dict[str, str]:
    """The headers of the request that opened this session (empty where there is none, as in tests)."""
    try:
        return {str(k): str(v) for k, v in st.context.headers.items()}
    except Exception:  # no session context
        return {}


def not_at_server() -> str | None:
    """None when this session is the person at the server (sign-in off, loopback only, no proxy: see
    guards/at_server.py); else why not."""
    from guards import at_server
    from pages.components import auth

    return at_server.not_at_server(
        sign_in=auth.sign_in_configured(), address=st.get_option("server.address"),
        allowed_hosts=st.get_option("server.allowedHosts") or [],
        cors_origins=st.get_option("server.corsAllowedOrigins") or [], headers=request_headers())


def named_in_address(key: str, names: dict[str, str], default: str, separator: str = " · ") -> None:
    """Keep a widget whose labels carry a count that changes ("Kept · 12") in the address by the option's own
    name (`?pic_decision=kept`), never by its label: Streamlit's bind="query-params" writes the label, and a
    label with an old count matches no option, so the address dropped the filter and a reload lost it.
    Call it before drawing the widget (keyed `key`, not bound): the first run takes the option from the
    address (by name, by label with any count, or by label before `separator`); every run writes it back."""
    if key not in st.session_state:
        raw = st.query_params.get(key)
        name = str(raw).split(separator)[0].strip().casefold() if raw else ""
        st.session_state[key] = next((option for option, label in names.items()
                                      if name in (str(option).casefold(), str(label).casefold())), default)
    if st.session_state[key] == default:
        st.query_params.pop(key, None)
    else:
        st.query_params[key] = str(st.session_state[key])


def within_upload_limits(uploads, limits) -> list:
    """The uploads within `limits` (a guards.uploads.UploadLimits); each refused one gets a message
    and is dropped from the server's memory at once (Streamlit keeps uploads until the session ends)."""
    kept, refused = limits.sort(uploads or [])
    context = get_script_run_ctx()
    for upload, reason in refused:
        st.error(reason, icon=":material/block:")
        if context is not None and getattr(context, "uploaded_file_mgr", None) is not None:
            context.uploaded_file_mgr.remove_file(context.session_id, upload.file_id)
    return kept


NOTICES = "common_notices"  # (text, icon): messages callbacks left for the next run to show


def notify(text: str, icon: str = ":material/check:") -> None:
    """A callback's message (a toast), shown by the run that follows it, the page's or a large view's. A
    callback of a widget inside a fragment (a dialog is one) that drew the toast itself would draw outside the
    fragment: Streamlit warns of it in the server log ("A fragment rerun was triggered with a callback that
    displays one or more elements")."""
    st.session_state.setdefault(NOTICES, []).append((text, icon))


def show_notices() -> None:
    """The messages callbacks left (see notify), once each."""
    for text, icon in st.session_state.pop(NOTICES, []):
        st.toast(text, icon=icon)


def run_page(main) -> None:
    """Run a page's body; whatever goes wrong is shown as a message, never as a traceback."""
    use_entry_script()
    launcher = jobs.launched_by.set(auth.current_user())  # the jobs this run starts are theirs
    account = jobs.launched_account.set(auth.current_account())
    try:
        show_notices()
        main()
    except ManifestError as exc:
        st.error(f"The manifest cannot be used: {escape_markdown(exc)}")
    except sqlite3.Error as exc:
        log.exception("manifest query failed")
        st.error(f"Reading the manifest {code_span(db_path())} failed: {escape_markdown(exc)}. Nothing you decided "
                 "is lost; reload to try again.")
    except Exception as exc:  # the last line of defence: a message and the server log, not a traceback
        log.exception("page failed")
        st.error(f"Something went wrong: {escape_markdown(exc)}. The details are in the server log; reload to "
                 "try again.")
    finally:
        jobs.launched_by.reset(launcher)
        jobs.launched_account.reset(account)


def use_entry_script() -> None:
    """Make sure the page runs under dashboard.py's navigation.

    Because a `pages/` folder exists, Streamlit starts in its old folder mode: until some session
    has run the entry script (whose st.navigation switches that mode off for the process), a first
    request for /review runs pages/review.py on its own, with the wrong sidebar and no layout.
    Switching the mode off and rerunning runs the entry script, which then opens the same page.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def open_manifest(create: bool = False) -> Manifest | None:
    """The manifest at $CURATION_DB, or None when there is none yet (and `create` is false); what is changed
    through it is recorded for the signed-in person."""
    path = db_path()
    if not create and not path.exists():
        return None
    return Manifest(path, create=create, user=auth.current_user(), account=auth.current_account())


def require_manifest() -> Manifest:
    """The manifest, or a message saying how to get one and the end of this script run."""
    manifest = open_manifest()
    if manifest is None:
        st.info(f"There is no manifest at {code_span(db_path())} yet. Try the sample archive on Home, "
                "or add PDFs on the Ingest page.")
        link("pages/home.py", "Home", ":material/home:")
        link("pages/ingest.py", "Ingest", ":material/upload_file:")
        st.stop()
    return manifest


def rendered_page(doc_id: int, page: int, path: str, long_side: int = views.RENDER_LONG_SIDE) -> bytes:
    """A page drawn from its PDF for a large view (raises views.PageUnavailable); a few recent ones are kept, as
    next and previous are often on the same page."""
    try:
        mtime_ns = pathlib.Path(path).stat().st_mtime_ns
    except OSError:
        mtime_ns = 0
    return _rendered(str(db_path()), doc_id, page, path, mtime_ns, long_side)


@st.cache_data(max_entries=8, show_spinner="Drawing the page…")
def _rendered(db: str, doc_id: int, page: int, path: str, mtime_ns: int, long_side: int) -> bytes:
    # The manifest, the path and its mtime are part of the key: a moved or changed file is drawn again.
    with open_manifest() as manifest:
        return views.render_page(manifest, doc_id, page, long_side=long_side)


def confirm_buttons(label: str, key: str, question: str, notice: str, act: Callable[[Manifest], str],
                    disabled: bool = False) -> None:
    """A question's two buttons: `label` runs `act` on the manifest, for a curator, and shows the text it returns
    under the session key `notice`; either button closes the question (`question`, the key that keeps it open)."""
    left, right = st.columns(2)
    if left.button(label, type="primary", key=f"{key}-confirm", disabled=disabled) and auth.require_curator():
        with open_manifest() as manifest:
            st.session_state[notice] = act(manifest)
        st.session_state.pop(question, None)
        st.rerun()
    if right.button("Cancel", key=f"{key}-cancel"):
        st.session_state.pop(question, None)
        st.rerun()


AFTER_RUN_FAILED = "after_run_failed"  # the keys whose work after a run failed: not tried again every poll


def after_this_run(key: str, seconds: float, work=lambda: None) -> None:
    """`work()` a moment (`seconds`) after this script run, then the whole page again: what a first open would
    otherwise wait for (a size estimate, cards cut from PDFs) is made once the page is drawn, which says so. A
    fragment polling every `seconds` does it in a run of its own; a run of the whole page that comes first (a
    click) finds `key` set (`waited`) and may do the work itself: a click is never lost to the fragment's rerun.
    Work that failed is not tried again in this session: its message stays instead."""
    failed = st.session_state.setdefault(AFTER_RUN_FAILED, {})
    if key in failed:
        st.error(f"Something went wrong: {escape_markdown(failed[key])}. The details are in the server log; reload "
                 "to try again.")
        return
    st.session_state[key] = True

    def later():
        context = get_script_run_ctx()
        if context is None or not context.fragment_ids_this_run:  # the page's own run: the fragment's comes later
            return
        st.session_state.pop(key, None)
        try:  # a fragment's run happens outside run_page
            work()
        except Exception as exc:
            log.exception("work after a page's run failed")
            failed[key] = str(exc)
        st.rerun()

    st.fragment(later, run_every=seconds)()


def waited(key: str) -> bool:
    """Whether an earlier run left `key`'s work (after_this_run) undone: this run does it."""
    return bool(st.session_state.pop(key, False))


def link(page: str, label: str, icon: str | None = None) -> None:
    """A link to another page; a plain caption when the page runs on its own (as in tests)."""
    try:
        st.page_link(page, label=label, icon=icon)
    except Exception:  # StreamlitPageNotFoundError outside st.navigation
        st.caption(label)


def sidebar() -> None:
    """Which manifest is open, what it holds, and the job at work on it."""
    with st.sidebar:
        st.caption("Manifest")
        # Inline code, not st.code: its highlighter is 1.5 MB of the browser's first page, a quarter of it.
        st.caption(code_span(db_path()))
        try:
            manifest = open_manifest()
            if manifest is None:
                st.caption("Not created yet: it appears with the first ingest.")
                return
            with manifest:
                running = bool(running_jobs(manifest))
            # While a job runs its line (and the page count) follow it, without rerunning the page.
            st.fragment(sidebar_figures, run_every=POLL_SECONDS if running else None)()
        except (ManifestError, sqlite3.Error) as exc:
            st.error(f"Cannot read it: {escape_markdown(exc)}")


def sidebar_figures() -> None:
    """The open manifest's pages and rule, and a line for each running job with its progress. A fragment's
    own reruns happen outside run_page: it shows its problems itself."""
    try:
        with open_manifest() as manifest:
            pages = views.page_count(manifest)
            rule = views.rule_summary(manifest.rule, manifest.threshold, manifest.picture_area_min)
            st.caption(f"{pages:,} page{'' if pages == 1 else 's'} · {rule}")
            for job in running_jobs(manifest):
                unit = OTHER_JOBS.get(job["kind"], "pages")
                done = f"{job['done']:,}/{job['total']:,} {unit}" if job["total"] else "starting"
                st.caption(f":material/sync: {job_title(job)} running: {done}")
    except (ManifestError, sqlite3.Error) as exc:
        st.error(f"Cannot read it: {escape_markdown(exc)}")


def running_jobs(manifest: Manifest) -> list:
    jobs_ = (running_job(manifest), *(manifest.running_job(kind) for kind in OTHER_JOBS))
    return [job for job in jobs_ if job is not None]


# -- jobs -------------------------------------------------------------------------------------


def running_job(manifest: Manifest):
    for kind in JOB_KINDS:
        job = manifest.running_job(kind)
        if job is not None:
            return job
    return None


def latest_job(manifest: Manifest):
    jobs_ = [job for job in (manifest.latest_job(kind) for kind in JOB_KINDS) if job is not None]
    return max(jobs_, key=lambda job: job["id"]) if jobs_ else None


def job_title(job) -> str:
    titles = {"sample": "Sample archive", "ingest": "Ingest", "caption": "Captioning",
              DECIDE_JOB: "Deciding the pictures under the new rule", bulk.JOB: "Bulk action",
              PICTURE_JOB: "Embedding the pictures", COUNT_JOB: "Counting the pictures at every cutoff"}
    return titles.get(job["kind"], job["kind"].title())


def job_panel(show_finished: bool = True, body=None) -> None:
    """Live progress of the sample or ingest job, refreshing itself while one runs, with Stop.

    `body(manifest)`, if given, is drawn under it and refreshes with it (the documents table).

    The job runs in its own process and writes its progress to the manifest; this only reads it,
    so a rerun, a reload or a second browser shows the same job and never starts another.
    """
    manifest = open_manifest()
    if manifest is None:
        return
    with manifest:
        running = running_job(manifest) is not None
    if running:
        st.session_state["job_was_running"] = True

    @st.fragment(run_every=POLL_SECONDS if running else None)
    def panel():
        with open_manifest() as manifest:
            job = running_job(manifest) or latest_job(manifest)
            if job is not None:
                if job["status"] != "running" and st.session_state.pop("job_was_running", False):
                    st.rerun()  # the job just ended: refresh the whole page (figures, buttons)
                show_job(manifest, job, show_finished)
            if body is not None:
                body(manifest)

    panel()


def show_job(manifest: Manifest, job, show_finished: bool) -> None:
    title = job_title(job)
    progress = views.job_progress(job)
    if job["status"] == "running":
        with st.container(border=True):
            if job["kind"] == "sample":
                text = (f"Writing the sample archive: {progress['done']} of {progress['total']} pages · "
                        f"{views.duration(views.elapsed(job))}")
            elif not progress["total"]:  # finding, hashing and counting the PDFs' pages
                text = f"{title}: finding the PDFs and counting their pages · {progress['rate']}"
            else:
                text = f"{title}: {progress['done']:,} of {progress['total']:,} pages · {progress['rate']}"
            job_progress_bar(job, text, "Stopping after the pages in hand… Start resumes where it stopped.",
                        job["message"])  # what the job says while it runs (the Dask cluster it runs on)
        return
    if not show_finished:
        return
    message = escape_markdown(job["message"] or "")  # it may quote a file name or a PDF's error
    finished = (job["finished_at"] or "")[:19].replace("T", " ")
    if job["status"] == "done":
        finished_alert(views.job_outcome(manifest, job), f"{title} finished {finished} UTC", message)
    elif job["status"] == "stopped":
        st.info(f"{title} stopped {finished} UTC. Press Start to resume where it stopped.",
                icon=":material/pause_circle:")
    elif job["status"] == "interrupted":
        st.warning(f"{title} did not finish: {message}. Press Start to resume.", icon=":material/warning:")
    else:
        st.error(f"{title} failed: {message or 'no reason was recorded'}. "
                 f"The job's log is in {code_span(db_path().parent / 'logs')}. Press Start to try again.",
                 icon=":material/error:")


def job_progress_bar(job, text: str, stopping: str, note: str | None = None) -> None:
    """A running job's progress bar (`text`, then the time left where known), a `note` under it, and its Stop
    button, or once Stop was pressed, what stopping does."""
    progress = views.job_progress(job)
    st.progress(progress["fraction"], text=text + (f" · {progress['eta']}" if progress["eta"] else ""))
    if note:
        st.caption(escape_markdown(note))  # a job's own words may quote a file
    if job["stop_requested"]:
        st.caption(stopping)
    else:
        st.button("Stop", icon=":material/stop_circle:", key=f"stop-{job['kind']}-{job['id']}",
                  on_click=stop_job, args=(job["id"],), disabled=auth.locked(), help=auth.help_for())


def finished_alert(outcome: str, when: str, message: str) -> None:
    """A finished job's summary in the colour of how it went: documents that could not be read are a problem."""
    if outcome == "error":
        st.error(f"{when}, but no document could be read: {message}", icon=":material/error:")
    elif outcome == "warning":
        st.warning(f"{when} with problems: {message}. Each document's reason is in the Documents table.",
                   icon=":material/warning:")
    else:
        st.success(f"{when}: {message}", icon=":material/check_circle:")


def stop_job(job_id: int) -> None:
    """Stop's callback: opens the manifest itself, as a callback runs before the next script run."""
    if not auth.require_curator():
        return
    with open_manifest() as manifest:
        jobs.stop(manifest, job_id)


def latest_job_panel(kind: str, running_key: str, poll: bool, show: Callable) -> None:
    """`show(job)` for the latest job of `kind`, refreshing itself every POLL_SECONDS while `poll`; when a job
    seen running (`running_key` in the session) ends, the whole page is drawn again with its outcome."""
    @st.fragment(run_every=POLL_SECONDS if poll else None)
    def panel():
        with open_manifest() as manifest:
            job = manifest.latest_job(kind)
        if job is None:
            return
        if job["status"] != "running" and st.session_state.pop(running_key, False):
            st.rerun()
        if job["status"] == "running":
            st.session_state[running_key] = True
        show(job)

    panel()


def start_job(kind: str, *args: str, running_key: str, command: str | None = None) -> None:
    """A curator's Start or Resume: launch the job's process (`python -m curation COMMAND ARGS`, the command
    named as the job's kind unless given), then show it running (`running_key` in the session), or say why it
    did not start."""
    if not auth.require_curator():
        return
    db = pathlib.Path(os.path.abspath(db_path()))
    problem = launch_and_wait(kind, lambda: jobs.launch(db, command or kind, *args))
    if problem:
        st.error(problem)
        return
    st.session_state[running_key] = True
    st.rerun()


def launch_and_wait(kind: str, launch) -> str | None:
    """Start a job process and wait until it has registered; an error message for a person, or None.

    A job that another browser started meanwhile is not an error: both now show that one.
    """
    with open_manifest(create=True) as manifest:
        process = launch()
        job = jobs.wait_for_job(manifest, kind, process, timeout=30)
        if job is not None or running_job(manifest) is not None:
            return None
        if any(last is not None and last["pid"] == process.pid for last in (latest_job(manifest),
                                                                             manifest.latest_job(kind))):
            return None  # it was quick: nothing new to do, and its outcome is shown with the job
        return (f"The {kind} process ended before it began (exit code {process.poll()}). "
                f"Its log is in {code_span(db_path().parent / 'logs')}.")
