"""Sign-in and roles in the app: with sign-in on, only signed-in people get past the entry script, and
only curators change anything. A viewer's changes are refused on the server even when the browser sends
them for a disabled widget (AppTest sends what a hand-made WebSocket message would), or from a page drawn
before they lost the curator's role; the manifest is left as it was. A curator's changes go through."""

import getpass
import re

import pytest
from streamlit.testing.v1 import AppTest

from apptest_support import ISSUER, ROOT, filled_db, grid_cards, grid_event, page, ran, shown, signed_in_as, texts
from curation import Manifest
from curation.manifest import history
from curation.sources import paths
from test_export_cli import record_scores, repeated_scan_pdf

CURATOR, VIEWER = "ana@example.org", "bo@example.org"
SECRETS = {
    "auth": {"redirect_uri": "http://127.0.0.1:8501/oauth2callback", "cookie_secret": "not-a-real-secret",
             "client_id": "dashboard", "client_secret": "not-a-real-secret",
             "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration"},
    "curation": {"curators": [CURATOR], "viewers": ["*@example.org"]},
}


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    monkeypatch.setenv(paths.ROOTS_ENV, str(tmp_path / "archive"))
    return path


def as_user(script: str, email: str | None) -> AppTest:
    """`script` with sign-in on, signed in as `email` (None: not signed in)."""
    at = page(script)
    at.secrets.update(SECRETS)
    at.user = signed_in_as(email) if email else {"is_logged_in": False}
    return ran(at)


def button(at, label):
    return next(b for b in at.button if b.label == label)


def cards(at) -> list[str]:
    """The Review grid's cards, each named "doc_id-page" as its events name it."""
    return list(grid_cards(at))


def locked_card(at, card: str) -> bool:
    """Whether every control on the card is disabled and says why: the decision's three and the caption box."""
    controls = re.findall(r"<(?:button|input) [^>]*>", grid_cards(at)[card])
    changes = [c for c in controls if 'aria-label="Open"' not in c]  # Open only looks
    return len(changes) == 4 and all(" disabled" in c and "Only curators can change this" in c for c in changes)


def forced(widget):
    """The widget as a hand-made WebSocket message treats it: its value is sent though it is disabled."""
    assert widget.disabled and "Only curators" in (widget.help or "")
    widget.proto.disabled = False
    return widget


def refused(at) -> bool:
    return any("Only curators can change this" in str(toast.value) for toast in at.toast)


# -- who gets in ----------------------------------------------------------------------------------


def test_without_sign_in_the_local_user_curates_and_home_says_so(db):
    at = ran(page("dashboard.py"))
    assert f"{getpass.getuser()} · sign-in is off" in " ".join(str(c.value) for c in at.sidebar.caption)
    notice = texts(at)
    assert "Sign-in is off" in notice and "Serving a team" in notice
    assert at.title[0].value == "Curation dashboard"


@pytest.fixture
def server_address():
    """Set `server.address` as the server's config would, for one test."""
    from streamlit import config

    before = config.get_option("server.address")
    yield lambda address: config.set_option("server.address", address)
    config.set_option("server.address", before)


def test_home_says_who_can_reach_a_dashboard_without_sign_in(db, server_address):
    server_address("127.0.0.1")
    at = ran(page("pages/home.py"))
    assert "Sign-in is off" in at.info[0].value and "listens on 127.0.0.1 only" in at.info[0].value
    server_address("0.0.0.0")
    at = ran(page("pages/home.py"))
    assert "listens beyond this machine" in at.warning[0].value
    at.secrets.update(SECRETS)
    at.user = signed_in_as(CURATOR)
    ran(at)
    assert "Sign-in is off" not in texts(at)


def test_each_named_provider_has_its_sign_in_button(db):
    at = page("dashboard.py")
    provider = {key: SECRETS["auth"][key] for key in ("client_id", "client_secret", "server_metadata_url")}
    at.secrets["auth"] = {"redirect_uri": SECRETS["auth"]["redirect_uri"], "cookie_secret": "not-a-real-secret",
                          "google": provider, "microsoft": provider}
    at.user = {"is_logged_in": False}
    ran(at)
    assert [b.label for b in at.button] == ["Sign in with Google", "Sign in with Microsoft"]


def test_not_signed_in_sees_only_the_sign_in_screen(db):
    filled_db(db, documents=1, pages=5)
    at = as_user("dashboard.py", None)
    assert [b.label for b in at.button] == ["Sign in"]
    assert "Sign in to use the dashboard" in texts(at)
    assert str(db) not in " ".join(str(c.value) for c in at.sidebar.caption)  # no manifest, no pages
    assert not at.metric and len(at.title) == 1


def test_someone_in_neither_list_is_not_allowed(db):
    filled_db(db, documents=1, pages=5)
    at = as_user("dashboard.py", "eve@elsewhere.org")
    assert at.title[0].value == "Not allowed"
    assert "eve@elsewhere.org" in shown(at.error[0].value)
    assert [b.label for b in at.button] == ["Sign out"]
    assert not at.metric


@pytest.mark.parametrize("email, role", [(CURATOR, "curator"), (VIEWER, "viewer")])
def test_a_signed_in_person_sees_the_dashboard_with_their_role(db, email, role):
    filled_db(db, documents=1, pages=5)
    at = as_user("dashboard.py", email)
    assert f"{email} · {role}" in " ".join(shown(c.value) for c in at.sidebar.caption)
    assert {m.label: m.value for m in at.metric}["Pages scored"] == "5"
    assert "Sign-in is off" not in texts(at)


@pytest.mark.parametrize("claims, why", [
    ({"email_verified": False}, f"did not state that your address {CURATOR} is verified"),
    ({"email_verified": None}, f"did not state that your address {CURATOR} is verified"),  # no claim at all
    ({"email_verified": "true"}, f"did not state that your address {CURATOR} is verified"),  # not JSON's true
    ({"iss": None}, "did not say who you are"),
    ({"sub": ""}, "did not say who you are"),
])
def test_an_address_the_provider_does_not_vouch_for_gets_no_role_and_the_screen_says_why(db, claims, why):
    """A provider account whose `email` is a curator's address, but unverified: the person is let in as
    no one, and told why, whatever the pages would do."""
    filled_db(db, documents=1, pages=5)
    user = {key: value for key, value in signed_in_as(CURATOR, **claims).items() if value is not None}
    for script in ("dashboard.py", "pages/review.py"):
        at = page(script)
        at.secrets.update(SECRETS)
        at.user = user
        ran(at)
        if script == "dashboard.py":
            assert at.title[0].value == "Not allowed" and not at.metric
            assert why in shown(at.error[0].value) and "verified addresses only" in shown(at.error[0].value)
        else:  # a page reached some other way still treats them as no one: every control locked
            assert all(locked_card(at, card) for card in cards(at))


def test_a_person_listed_by_issuer_and_subject_needs_no_verified_address(db):
    """For providers that send no `email_verified` (Microsoft Entra ID): "ISSUER SUBJECT" in a list, exactly;
    a pattern such as "*" names no account, so an unverified address is still no one."""
    filled_db(db, documents=1, pages=5)
    at = page("dashboard.py")
    at.secrets.update(SECRETS)
    at.secrets["curation"] = {"curators": [f"{ISSUER} entra-oid-1"], "viewers": ["*"]}
    at.user = {"is_logged_in": True, "iss": ISSUER, "sub": "entra-oid-1", "email": "li@example.org"}
    ran(at)
    assert "entra-oid-1 · curator" in " ".join(shown(c.value) for c in at.sidebar.caption)
    at.user = {"is_logged_in": True, "iss": ISSUER, "sub": "entra-oid-2", "email": CURATOR}
    ran(at)
    assert at.title[0].value == "Not allowed"


@pytest.mark.parametrize("email", ["\u212aim@example.org",  # the Kelvin sign: str.lower() makes it "k"
                                   " kim@example.org\n", "kim@example.org\n", "kim@example.org ",
                                   "kim@exa\u0131mple.org", "kim @example.org", "kim@example.org\t"])
def test_an_address_that_is_not_the_same_plain_ascii_address_gets_no_role(db, email):
    """Verified addresses that case folding or a strip would have turned into a curator's, and "*" too:
    an address holding anything outside printable ASCII, or a space, matches nothing."""
    filled_db(db, documents=1, pages=5)
    at = page("dashboard.py")
    at.secrets.update(SECRETS)
    at.secrets["curation"] = {"curators": ["Kim@example.org"], "viewers": ["*"]}
    at.user = signed_in_as(email)
    ran(at)
    assert at.title[0].value == "Not allowed" and not at.metric


@pytest.mark.parametrize("email", ["kim@example.org", "KIM@Example.ORG"])
def test_the_same_address_in_any_ascii_case_is_the_listed_one(db, email):
    filled_db(db, documents=1, pages=5)
    at = page("dashboard.py")
    at.secrets.update(SECRETS)
    at.secrets["curation"] = {"curators": ["Kim@example.org"], "viewers": []}
    at.user = signed_in_as(email)
    ran(at)
    assert f"{email} · curator" in " ".join(shown(c.value) for c in at.sidebar.caption)


def test_a_curators_change_is_recorded_with_their_issuer_and_subject(db):
    filled_db(db, documents=1, pages=5)
    at = as_user("pages/review.py", CURATOR)
    grid_event(at, "decide", cards(at)[0], "exclude")
    with Manifest(db) as manifest:
        [action] = [a for a in history.actions(manifest.conn) if a["kind"] == "override"]
    assert (action["user"], action["issuer"], action["subject"]) == (CURATOR, ISSUER, f"subject-of-{CURATOR}")


# -- Review ---------------------------------------------------------------------------------------


def test_a_viewer_cannot_override_or_caption(db):
    filled_db(db, documents=1, pages=10)
    at = as_user("pages/review.py", VIEWER)
    first = cards(at)[0]
    assert locked_card(at, first)
    grid_event(at, "decide", first, "exclude")  # a hand-made message: sent though the control is disabled
    assert 'data-value="auto" aria-pressed="true"' in grid_cards(at)[first]  # the saved decision still
    grid_event(at, "caption", first, "a hijacked caption")
    with Manifest(db) as manifest:
        assert manifest.overrides() == []
        assert not manifest.conn.execute("SELECT COUNT(*) FROM captions").fetchone()[0]


def test_a_viewer_cannot_apply_a_bulk_action_or_learn(db):
    filled_db(db, documents=1, pages=10)
    at = as_user("pages/review.py", VIEWER)
    forced(button(at, "Exclude all")).click()
    ran(at)
    assert not [b for b in at.button if b.label == "Exclude 10 pages"]  # the question is not even asked
    with Manifest(db) as manifest:
        assert manifest.overrides() == []
    forced(button(at, "Learn from my overrides")).click()
    ran(at)
    assert not [w for w in at.warning if "learns from your overrides" in w.value]  # it did not try


def test_a_curator_who_lost_the_role_cannot_change_from_the_page_still_open(db):
    """The page was drawn for a curator; the administrator then made them a viewer. The controls they
    see are still enabled, so the change reaches the callbacks, which refuse it."""
    filled_db(db, documents=1, pages=10)
    at = as_user("pages/review.py", CURATOR)
    at.secrets["curation"] = {"curators": [], "viewers": [CURATOR]}
    first = cards(at)[0]
    doc_id, page_no = first.split("-")
    grid_event(at, "decide", first, "exclude")
    assert refused(at)
    assert 'data-value="auto" aria-pressed="true"' in grid_cards(at)[first] and locked_card(at, first)
    at = as_user("pages/review.py", CURATOR)
    at.secrets["curation"] = {"curators": [], "viewers": [CURATOR]}
    grid_event(at, "caption", first, "a hijacked caption")
    assert refused(at)
    with Manifest(db) as manifest:
        assert manifest.overrides() == []
        assert manifest.caption(int(doc_id), int(page_no)) in (None, "")


@pytest.mark.parametrize("script, key, value", [("pages/threshold.py", "threshold_save", None),
                                                ("pages/ingest.py", "thumbnails", "none")])
def test_a_demoted_curator_cannot_save_settings_from_the_page_still_open(db, archive, script, key, value):
    filled_db(db, documents=1, pages=10)
    with Manifest(db) as manifest:
        paths.add_source(manifest, archive)
        before = (manifest.threshold, manifest.thumbnail_store)
    at = as_user(script, CURATOR)
    if script.endswith("threshold.py"):
        at.number_input(key="threshold_number").set_value(30.0)
        ran(at)
    at.secrets["curation"] = {"curators": [], "viewers": [CURATOR]}
    widget = at.button(key=key) if value is None else at.selectbox(key=key)
    widget.click() if value is None else widget.set_value(value)
    ran(at)
    assert refused(at)
    with Manifest(db) as manifest:
        assert (manifest.threshold, manifest.thumbnail_store) == before


def test_a_curator_overrides_and_captions(db):
    filled_db(db, documents=1, pages=10)
    at = as_user("pages/review.py", CURATOR)
    first = cards(at)[0]
    assert " disabled" not in grid_cards(at)[first]
    grid_event(at, "decide", first, "exclude")
    doc_id, page_no = (int(part) for part in first.split("-"))
    grid_event(at, "caption", first, "a lady in a promenade dress")
    assert not refused(at)
    with Manifest(db) as manifest:
        assert [(o["doc_id"], o["page"], o["keep"]) for o in manifest.overrides()] == [(doc_id, page_no, 0)]
        assert manifest.caption(doc_id, page_no) == "a lady in a promenade dress"


# -- Threshold, Ingest, Home, Export ------------------------------------------------------------------


@pytest.mark.parametrize("email, saved", [(VIEWER, False), (CURATOR, True)])
def test_only_a_curator_saves_the_rule(db, email, saved):
    filled_db(db, documents=1, pages=10)
    at = as_user("pages/threshold.py", email)
    at.number_input(key="threshold_number").set_value(30.0)
    ran(at)
    save = at.button(key="threshold_save")
    (save if saved else forced(save)).click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.threshold == (30.0 if saved else 45.0)


@pytest.mark.parametrize("email, saved", [(VIEWER, False), (CURATOR, True)])
def test_only_a_curator_changes_ingest_settings(db, archive, email, saved):
    with Manifest(db) as manifest:
        paths.add_source(manifest, archive)
    at = as_user("pages/ingest.py", email)
    store = at.selectbox(key="thumbnails")
    (store if saved else forced(store)).set_value("none")
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.thumbnail_store == ("none" if saved else "sqlite")


def test_a_viewer_cannot_add_a_source_start_an_ingest_or_remove_a_source(db, archive):
    with Manifest(db) as manifest:
        paths.add_source(manifest, archive)
    at = as_user("pages/ingest.py", VIEWER)
    forced(button(at, "Start")).click()
    ran(at)
    forced(button(at, "Remove")).click()
    ran(at)
    at.text_input[0].input(str(archive / "issue-0.pdf"))
    forced(button(at, "Add")).click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.latest_job("ingest") is None
        assert paths.sources(manifest) == [str(archive)]


def test_a_viewer_cannot_write_the_sample_archive(db):
    at = as_user("pages/home.py", VIEWER)
    forced(button(at, "Try a sample archive")).click()
    ran(at)
    assert not db.exists()


def test_a_viewer_cannot_export(tmp_path, monkeypatch):
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 4)
    db = tmp_path / "data" / "manifest.sqlite"
    with Manifest(db) as manifest:
        record_scores(manifest, pdf, [60, 20, 70, 80])
    monkeypatch.setenv("CURATION_DB", str(db))
    at = AppTest.from_file(str(ROOT / "pages" / "export.py"), default_timeout=60)
    at.secrets.update(SECRETS)
    at.user = {"is_logged_in": True, "email": VIEWER}
    ran(at)
    forced(next(b for b in at.button if b.label.startswith("Export"))).click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.latest_job("export") is None
    assert not (db.parent / "exports").exists()


def test_a_viewer_cannot_install_or_train_a_vet_model(models, demo_model):
    at = as_user("pages/vet_scanner.py", VIEWER)
    forced(button(at, "Create the demo model")).click()
    ran(at)
    forced(button(at, "Install the ImageNet model (EfficientNet-Lite0)")).click()
    ran(at)
    assert list(models.iterdir()) == []
    (models / "demo-vit").symlink_to(demo_model, target_is_directory=True)
    at = as_user("pages/vet_scanner.py", VIEWER)
    next(box for box in at.text_input if box.label == "Photos folder").input(str(models))
    ran(at)
    forced(button(at, "Train")).click()
    ran(at)
    assert sorted(path.name for path in models.iterdir()) == ["demo-vit"]
