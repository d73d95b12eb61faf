"""Sign-in end to end: Chromium, `streamlit run streamlit_app.py` with sign-in on, and a real OpenID Connect
provider (oidc-provider-mock: its login form takes the person's subject; its accounts carry their claims).

Not signed in, every address shows only the sign-in screen; a viewer sees Review but cannot overrule a
page; signed out, the sign-in screen again; a curator's override is saved, the card names who made it and
the history row names the provider's issuer and the curator's subject. An account that carries a curator's
address without the provider vouching for it (no `email_verified`) is let in as no one, and told why.
"""

import os
import re
import time

import pytest

from apptest_support import filled_db
from curation import Manifest
from curation.manifest import history
from server_support import CHROMIUM, chromium, free_port, no_exception, settle, streamlit_server

CURATOR, VIEWER = "ana@example.org", "bo@example.org"
# The provider's accounts: subject -> claims. Mallory's account says it is the curator's address, unverified.
ACCOUNTS = {"id-ana": {"email": CURATOR, "email_verified": True}, "id-bo": {"email": VIEWER, "email_verified": True},
            "mallory": {"email": CURATOR}}

playwright = pytest.importorskip("playwright.sync_api")
oidc_provider_mock = pytest.importorskip("oidc_provider_mock")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")


@pytest.fixture
def provider(monkeypatch):
    """The OpenID Connect provider, on plain HTTP on this machine (Authlib wants HTTPS unless told)."""
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    accounts = [oidc_provider_mock.User(sub=sub, claims=claims) for sub, claims in ACCOUNTS.items()]
    with oidc_provider_mock.run_server_in_thread(user_claims=accounts) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture
def server(tmp_path, provider):
    """The dashboard with sign-in on: a secrets file of its own, the repository's left untouched."""
    db = filled_db(tmp_path / "data" / "manifest.sqlite", documents=1, pages=8)
    port = free_port()
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f"""
[auth]
redirect_uri = "http://127.0.0.1:{port}/oauth2callback"
cookie_secret = "a-cookie-secret-for-this-test-only"
client_id = "curation-dashboard"
client_secret = "a-client-secret-for-this-test-only"
server_metadata_url = "{provider}/.well-known/openid-configuration"

[curation]
curators = ["{CURATOR}"]
viewers = ["*@example.org"]
""")
    env = {"CURATION_DB": str(db), "AUTHLIB_INSECURE_TRANSPORT": "1"}
    with streamlit_server(tmp_path / "streamlit.log", env, "--secrets.files", str(secrets), port=port):
        yield f"http://127.0.0.1:{port}", db


@pytest.fixture
def browser():
    with chromium() as browser:
        yield browser


def new_page(browser):
    """A page in a context of its own: no cookie from an earlier sign-in."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(30_000)
    page.route(re.compile(r"^https://"), lambda route: route.abort())  # the provider's page links a CDN style
    return page


def main_text(page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def sidebar_text(page) -> str:
    """The sidebar as a person reads it: without the invisible joiner that keeps an address from becoming a link."""
    return page.locator("[data-testid='stSidebar']").inner_text().replace("\u2060", "")


def authorize(page, url: str, subject: str) -> None:
    page.goto(url)
    page.get_by_role("button", name="Sign in").click()
    page.locator("input[name='sub']").fill(subject)  # the provider's login form
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(re.compile(re.escape(url)))


def sign_in(page, url: str, subject: str) -> None:
    email = ACCOUNTS[subject]["email"]
    authorize(page, url, subject)
    page.get_by_text(re.compile(re.escape(email).replace("@", "\u2060?@") + " ·")).wait_for()  # the name is shown escaped
    settle(page)
    no_exception(page)


def open_review(page, url: str) -> None:
    page.goto(f"{url}/review")
    page.get_by_text("overrides in the manifest").wait_for()
    settle(page)
    no_exception(page)


def first_card_exclude(page):
    return page.locator("[class*='st-key-review-card-']").first.get_by_role("button", name="Exclude")


def test_sign_in_then_a_viewer_looks_and_a_curator_overrules(server, browser, provider):
    url, db = server

    # Not signed in: the sign-in screen, whatever the address; no page, no manifest, no navigation.
    page = new_page(browser)
    for path in ("", "/review", "/ingest"):
        page.goto(url + path)
        page.get_by_role("button", name="Sign in").wait_for()
        settle(page)
        no_exception(page)
        assert "Sign in to use the dashboard" in main_text(page)
        assert "overrides in the manifest" not in main_text(page)
        assert page.locator("[data-testid='stSidebarNav']").count() == 0
        assert str(db) not in page.content()

    # A viewer sees Review, its controls disabled; a click changes nothing.
    sign_in(page, url, "id-bo")
    assert f"{VIEWER} · viewer" in sidebar_text(page)
    open_review(page, url)
    exclude = first_card_exclude(page)
    assert exclude.is_disabled()
    exclude.click(force=True)
    settle(page)
    no_exception(page)
    with Manifest(db) as manifest:
        assert manifest.overrides() == []

    # Signing out (and ending the provider's session) leaves only the sign-in screen again.
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="End session").click()  # the provider's page
    page.get_by_role("button", name="Sign in").wait_for()
    settle(page)
    assert "overrides in the manifest" not in main_text(page)

    # A curator overrules a page: saved, and the card says who and when.
    sign_in(page, url, "id-ana")
    assert f"{CURATOR} · curator" in sidebar_text(page)
    open_review(page, url)
    first_card_exclude(page).click()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with Manifest(db) as manifest:
            if manifest.overrides():
                break
        time.sleep(0.2)
    with Manifest(db) as manifest:
        assert [row["keep"] for row in manifest.overrides()] == [0]
    settle(page)
    no_exception(page)
    # Who did what is drawn on the card by the Review page's history ("excluded by ana@example.org, 3 Dec 14:02").
    # (Markdown: an invisible word joiner before the @ keeps it from becoming a mail link.)
    page.get_by_text(re.compile("excluded by " + re.escape(CURATOR).replace("@", "\u2060?@"))).first.wait_for(
        timeout=10_000)
    with Manifest(db) as manifest:
        [action] = [a for a in history.actions(manifest.conn) if a["kind"] == "override"]
    assert (action["user"], action["issuer"], action["subject"]) == (CURATOR, provider, "id-ana")

    # The upload route takes a signed-in curator's files (it refuses those of a session not signed in).
    page.goto(f"{url}/ingest")
    settle(page)
    page.get_by_role("tab", name="Upload PDFs").click()
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        files=[{"name": "issue.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1.4\n" + bytes(1000)}])
    page.get_by_text("1 file(s) chosen").wait_for()
    no_exception(page)


def test_an_address_the_provider_does_not_vouch_for_is_refused_and_told_why(server, browser):
    url, db = server
    page = new_page(browser)
    authorize(page, url, "mallory")
    for path in ("", "/review"):
        page.goto(url + path)
        page.get_by_text("Not allowed").first.wait_for()
        settle(page)
        no_exception(page)
        text = main_text(page).replace("\u2060", "")
        assert f"did not state that your address {CURATOR} is verified" in text
        assert "overrides in the manifest" not in text and "· curator" not in sidebar_text(page)
    with Manifest(db) as manifest:
        assert manifest.overrides() == [] and not history.actions(manifest.conn)
