"""Helpers for the dashboard's AppTest suites: manifests built with the library, pages run in-process."""

import pathlib
import re
import time

import cv2
import numpy as np
from streamlit.testing.v1 import AppTest

from curation import Manifest
from curation.runs import sample

ROOT = pathlib.Path(__file__).resolve().parent.parent


def thumbnail(shade: int = 200) -> bytes:
    """A real (tiny) JPEG: st.image has to decode what the manifest holds."""
    gray = np.full((32, 24), shade, np.uint8)
    gray[8:24, 6:18] = 40
    return cv2.imencode(".jpg", gray)[1].tobytes()


def filled_db(db: pathlib.Path, documents: int = 2, pages: int = 30, seed: int = 0, **options) -> pathlib.Path:
    with Manifest(db) as manifest:
        sample.fill_manifest(manifest, documents, pages, seed=seed, thumbnails=[thumbnail(180), thumbnail(90)],
                             **options)
    return db


ISSUER = "https://accounts.example.org"


def signed_in_as(email: str, **claims) -> dict:
    """st.user as Streamlit fills it from a provider's ID token: issuer, subject (here made from the
    address), the address and whether the provider verified it (true unless `claims` say otherwise)."""
    return {"is_logged_in": True, "iss": ISSUER, "sub": f"subject-of-{email}", "email": email,
            "email_verified": True, **claims}


def page(script: str) -> AppTest:
    return AppTest.from_file(str(ROOT / script), default_timeout=60)


def ran(at: AppTest) -> AppTest:
    """Run (or rerun) the page and fail on any exception element: errors must be messages."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def drawn(at: AppTest) -> AppTest:
    """Run the page, then the run it asks for once drawn (common.after_this_run: a size estimate, the Export
    preview's images), which AppTest's timed fragments never trigger; fail on any exception element."""
    return ran(ran(at))


def texts(at: AppTest) -> str:
    """Everything a person reads on the page, for assertions that do not care where it is."""
    parts = [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error", "title", "subheader")
             for e in getattr(at, kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    return "\n".join(shown(str(p)) for p in parts)


MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def shown(body: str) -> str:
    """What a person reads of Markdown that holds escaped text (pages.components.common.escape_markdown): the
    characters without their backslashes, and without the invisible word joiners that keep addresses from
    becoming links."""
    return MARKDOWN_ESCAPE.sub(r"\1", body).replace("\u2060", "")


def wait_for(condition, timeout: float = 60.0, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out waiting")


def job_finished(db: pathlib.Path, kind: str):
    def finished():
        if not db.exists():
            return None
        with Manifest(db) as manifest:
            job = manifest.latest_job(kind)
            return job if job is not None and job["status"] != "running" else None
    return finished


def add_features(db: pathlib.Path, seed: int = 0) -> dict:
    """Give every scored page picture features the way real scans have them, including the pages σ gets
    wrong: text lifted by dark borders (high σ, no picture) and faded engravings (low σ, a large picture).
    Returns the truth: (doc_id, page) -> is it an illustration."""
    rng = np.random.default_rng(seed)
    truth = {}
    with Manifest(db) as manifest:
        rows = manifest.conn.execute("SELECT doc_id, page, sigma FROM pages WHERE status = 'ok' ORDER BY doc_id, page")
        updates = []
        for doc_id, page_no, sigma in rows.fetchall():
            picture = sigma > 45
            if rng.random() < 0.2:  # σ is fooled on one page in five
                picture = not picture
            share = float(rng.uniform(0.06, 0.5)) if picture else float(rng.choice([0.0, rng.uniform(0, 0.01)]))
            tone = float(rng.uniform(0.6, 0.85)) if picture else float(rng.uniform(0.35, 0.55))
            # On a page of about 100 square inches the largest picture covers share × 100 of them.
            updates.append((share, share * 100, tone, sigma * 0.8, share * 2, int(rng.integers(-2**62, 2**62)), doc_id,
                            page_no))
            truth[(doc_id, page_no)] = picture
        with manifest.transaction():
            manifest.conn.executemany(
                "UPDATE pages SET picture_share = ?, picture_area = ?, ink_tone = ?, sigma_content = ?, ink_coverage = ?, "
                "phash = ?, features_version = 2 WHERE doc_id = ? AND page = ?", updates)
    return truth


# -- Review's grid of cards (pages/components/card_grid.py): one component, read and clicked here as the browser would ---


def grid_cards(at: AppTest, part: str = "html") -> dict[str, str]:
    """The cards of the screen's grid, {card id: its HTML (or, `part` "classes", its classes)}, in order."""
    import json

    (grid,) = [e for e in at.get("bidi_component") if e.proto.component_name == "curation_card_grid"]
    return {card["id"]: card[part] for card in json.loads(grid.proto.json)["cards"]}


def grid_event(at: AppTest, kind: str, card_id, value: str | None = None) -> AppTest:
    """What the grid sends when the person clicks a card's control (or, "caption", leaves its caption box): the
    page runs with that event, as from the browser; no exception."""
    import json

    from streamlit.components.v2.bidi_component.main import _make_trigger_id
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    (grid,) = [e for e in at.get("bidi_component") if e.proto.component_name == "curation_card_grid"]
    states = at._tree.get_widget_states()
    event = {"type": kind, "id": str(card_id), "value": value}
    states.widgets.append(WidgetState(id=_make_trigger_id(grid.proto.id, "events"),
                                      json_trigger_value=json.dumps([{"event": "event", "value": event}])))
    at._run(widget_state=states)
    assert not at.exception, [e.value for e in at.exception]
    return at
