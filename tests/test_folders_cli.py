"""`python -m curation folders`: the allowed folders, added, listed and removed from the command line."""

import pytest
from click.testing import CliRunner

from curation import Manifest
from curation.cli import cli
from curation.sources import paths


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.delenv(paths.ROOTS_ENV, raising=False)
    return tmp_path / "data" / "manifest.sqlite"


def test_a_folder_added_is_listed_and_accepted_then_removed(db, tmp_path):
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "issue.pdf").write_bytes(b"%PDF-1.4\n")
    with pytest.raises(paths.OutsideRoots):
        paths.check_path(str(archive), paths.allowed_roots(db), base=db.parent)

    result = invoke("folders", "add", archive, "--db", db)
    assert result.exit_code == 0, result.output
    assert f"allowed {archive}" in result.output
    listed = invoke("folders", "list", "--db", db).output.splitlines()
    assert listed == [f"{db.parent}\t(the manifest's folder)", f"{archive}\t(added)"]
    with Manifest(db) as manifest:
        roots = paths.allowed_roots(db, manifest)
    assert paths.check_path(str(archive / "issue.pdf"), roots, base=db.parent) == archive / "issue.pdf"

    result = invoke("folders", "remove", archive, "--db", db)
    assert result.exit_code == 0 and "no longer allowed" in result.output
    assert invoke("folders", "list", "--db", db).output.splitlines() == [f"{db.parent}\t(the manifest's folder)"]


def test_what_cannot_be_added_or_removed_is_one_line_and_exit_1(db, tmp_path, monkeypatch):
    monkeypatch.setenv(paths.ROOTS_ENV, str(tmp_path / "env-root"))
    for args, words in [
        (("add", tmp_path / "missing"), "is not a folder"),
        (("add", "/"), "the whole file system"),
        (("remove", db.parent), "not one of the folders added"),
        (("remove", tmp_path / "env-root"), "not one of the folders added"),
    ]:
        result = invoke("folders", *args, "--db", db)
        assert result.exit_code == 1 and words in result.output, result.output
    assert f"{tmp_path / 'env-root'}\t($CURATION_ROOTS)" in invoke("folders", "list", "--db", db).output


def test_a_link_is_allowed_as_the_folder_it_leads_to(db, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert invoke("folders", "add", tmp_path / "link", "--db", db).exit_code == 0
    with Manifest(db) as manifest:
        assert paths.configured_roots(manifest) == [str(real)]


def test_the_help_is_the_documentation():
    helped = invoke("folders", "--help").output
    assert "$CURATION_ROOTS" in helped and "folders add /srv/archives/harpers" in helped
    for command in ("add", "list", "remove"):
        assert invoke("folders", command, "--help").exit_code == 0
