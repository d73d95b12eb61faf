"""A folder outside the allowed ones: the Ingest page's refusal says the command that allows it, and only
the person at the server (sign-in off, server on loopback, no proxy) may allow it from the page."""

import pytest

from apptest_support import page, ran, shown, signed_in_as, texts
from curation import Manifest
from curation.sources import paths
from guards import at_server
from pages.components import common
from test_auth import CURATOR, SECRETS

LOCAL = {"Host": "localhost:8501", "Origin": "http://localhost:8501"}
ALLOW = "Allow this folder and add it"


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    monkeypatch.delenv(paths.ROOTS_ENV, raising=False)
    return path


@pytest.fixture
def outside(tmp_path):
    from conftest import small_pdf

    folder = tmp_path / "elsewhere"
    folder.mkdir()
    small_pdf(folder / "issue.pdf", pages=2)
    return folder


def headers(monkeypatch, sent):
    monkeypatch.setattr(common, "request_headers", lambda: dict(sent))


def typed(at, text):
    at.text_input[0].input(text)
    next(b for b in at.button if b.label == "Add").click()
    return ran(at)


def buttons(at):
    return [b.label for b in at.button]


def test_the_person_at_the_server_allows_the_folder_and_it_is_added(db, outside, monkeypatch):
    headers(monkeypatch, LOCAL)
    at = typed(ran(page("pages/ingest.py")), str(outside / "issue.pdf"))
    assert "outside the folders" in shown(at.error[0].value)
    assert "python -m curation folders add FOLDER" in shown(at.error[0].value)
    assert ALLOW in buttons(at) and "Cancel" in buttons(at)
    assert str(outside) in texts(at)
    assert not db.exists() or not paths.configured_roots(Manifest(db))  # nothing allowed before the click
    next(b for b in at.button if b.label == ALLOW).click()
    ran(at)
    with Manifest(db) as manifest:
        assert paths.configured_roots(manifest) == [str(outside)]
        assert paths.sources(manifest) == [str(outside / "issue.pdf")]
    assert "1 PDF(s)" in texts(at) and ALLOW not in buttons(at)


def test_cancel_forgets_the_offer(db, outside, monkeypatch):
    headers(monkeypatch, LOCAL)
    at = typed(ran(page("pages/ingest.py")), str(outside))
    next(b for b in at.button if b.label == "Cancel").click()
    ran(at)
    assert ALLOW not in buttons(at)
    assert not db.exists()


@pytest.mark.parametrize("sent", [
    {},  # no request: no one known to be at the server
    {**LOCAL, "X-Forwarded-For": "203.0.113.9"},  # through a proxy
    {**LOCAL, "Via": "1.1 proxy"},
    {"Host": "curation.example.org", "Origin": "https://curation.example.org"},
    {"Host": "localhost:8501", "Origin": "https://evil.example"},
    {"Host": "localhost:8501"},  # no Origin: not a browser
])
def test_anyone_else_gets_only_the_command(db, outside, monkeypatch, sent):
    headers(monkeypatch, sent)
    at = typed(ran(page("pages/ingest.py")), str(outside))
    assert "python -m curation folders add FOLDER" in shown(at.error[0].value)
    assert ALLOW not in buttons(at)


@pytest.mark.parametrize("option, value", [
    ("server.address", "0.0.0.0"), ("server.address", ""),
    ("server.allowedHosts", ["localhost", "curation.example.org"]),
    ("server.corsAllowedOrigins", ["https://curation.example.org"]),
])
def test_the_server_beyond_loopback_or_serving_other_names_offers_nothing(db, outside, monkeypatch, option, value):
    from streamlit import config

    headers(monkeypatch, LOCAL)
    saved = config.get_option(option)
    config.set_option(option, value)  # as the server's config would set it
    try:
        at = typed(ran(page("pages/ingest.py")), str(outside))
    finally:
        config.set_option(option, saved)
    assert "python -m curation folders add FOLDER" in shown(at.error[0].value)
    assert ALLOW not in buttons(at)


def test_with_sign_in_on_not_even_a_curator_is_offered_it(db, outside, monkeypatch):
    headers(monkeypatch, LOCAL)
    at = page("pages/ingest.py")
    at.secrets.update(SECRETS)
    at.user = signed_in_as(CURATOR)
    at = typed(ran(at), str(outside))
    assert "python -m curation folders add FOLDER" in shown(at.error[0].value)
    assert ALLOW not in buttons(at)


def test_an_offer_left_on_the_page_is_checked_again_on_the_click(db, outside, monkeypatch):
    headers(monkeypatch, LOCAL)
    at = typed(ran(page("pages/ingest.py")), str(outside))
    headers(monkeypatch, {**LOCAL, "X-Forwarded-For": "203.0.113.9"})  # the same session, now not trusted
    allow = next(b for b in at.button if b.label == ALLOW)
    allow.click()
    ran(at)
    assert not db.exists() or paths.configured_roots(Manifest(db)) == []


@pytest.mark.parametrize("host, local", [
    ("localhost", True), ("localhost:8501", True), ("127.0.0.1:8501", True), ("127.8.0.1", True),
    ("[::1]:8501", True), ("::1", True), ("LOCALHOST", True),
    ("", False), (None, False), ("0.0.0.0", False), ("10.0.0.2", False), ("localhost.evil.example", False),
    ("curation.example.org:443", False), ("[::]:8501", False),
])
def test_loopback_hosts(host, local):
    assert at_server.loopback_host(host) is local


def test_every_condition_is_needed():
    base = dict(sign_in=False, address="127.0.0.1", allowed_hosts=["localhost", "127.0.0.1"], cors_origins=[],
                headers={"host": "127.0.0.1:8501", "origin": "http://127.0.0.1:8501"})
    assert at_server.not_at_server(**base) is None
    for change in [dict(sign_in=True), dict(address=""), dict(address="0.0.0.0"), dict(address="192.168.1.4"),
                   dict(allowed_hosts=["localhost", "team.example.org"]),
                   dict(cors_origins=["https://team.example.org"]),
                   dict(headers={}), dict(headers={"host": "team.example.org"}), dict(headers={"host": "localhost"}),
                   dict(headers={"host": "localhost", "forwarded": "for=203.0.113.9"}),
                   dict(headers={"host": "localhost", "x-real-ip": "203.0.113.9"})]:
        assert at_server.not_at_server(**{**base, **change}), change
