"""Server paths a browser user may ingest from, sources, and uploads stored under safe names."""

import io
import os

import pytest

from curation.sources import paths
from curation.sources.paths import PathRefused, check_path


@pytest.fixture
def tree(tmp_path):
    """An allowed root with an archive in it, and a folder outside every root."""
    root = tmp_path / "data"
    (root / "archive" / "1890").mkdir(parents=True)
    (root / "archive" / "1890" / "issue.pdf").write_bytes(b"%PDF-1.4\n")
    (root / "notes.txt").write_text("not a pdf")
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "secret.pdf").write_bytes(b"%PDF-1.4\n")
    return root, outside


def test_accepts_a_folder_or_a_pdf_under_a_root(tree):
    root, _ = tree
    assert check_path(str(root / "archive"), [root], root) == (root / "archive").resolve()
    assert check_path(f"  '{root / 'archive' / '1890' / 'issue.pdf'}'  ", [root], root).name == "issue.pdf"


def test_relative_paths_start_in_the_data_folder(tree):
    root, _ = tree
    assert check_path("archive/1890", [root], root) == (root / "archive" / "1890").resolve()


@pytest.mark.parametrize("text, reason", [
    ("", "Type the path"),
    ("archive/../../private", "`..`"),
    ("../private/secret.pdf", "`..`"),
    ("notes.txt", "not a PDF"),
    ("missing-folder", "Nothing at"),
])
def test_refuses_with_a_reason(tree, text, reason):
    root, _ = tree
    with pytest.raises(PathRefused, match=reason):
        check_path(text, [root], root)


def test_refuses_paths_outside_the_roots_without_saying_whether_they_exist(tree):
    root, outside = tree
    with pytest.raises(PathRefused, match="outside the folders") as real:
        check_path(str(outside / "secret.pdf"), [root], root)
    with pytest.raises(PathRefused, match="outside the folders") as missing:
        check_path(str(outside / "no-such.pdf"), [root], root)
    assert "Nothing" not in str(real.value) + str(missing.value)


def test_refuses_symlinks_that_lead_out_of_the_roots(tree):
    root, outside = tree
    os.symlink(outside, root / "escape")
    os.symlink(outside / "secret.pdf", root / "archive" / "linked.pdf")
    refusals = []
    for typed in ("escape", "archive/linked.pdf"):
        with pytest.raises(PathRefused, match="is a link to a place outside the folders") as refused:
            check_path(typed, [root], root)
        refusals.append(str(refused.value))
    with pytest.raises(PathRefused, match="holds links to places outside") as refused:
        check_path("archive", [root], root)
    assert "linked.pdf" in str(refused.value)
    refusals.append(str(refused.value))
    assert not [text for text in refusals if str(outside) in text], refusals  # where a link points stays unsaid


def test_links_between_allowed_folders_are_fine(tree, tmp_path):
    root, _ = tree
    other = tmp_path / "scans"
    other.mkdir()
    os.symlink(other, root / "archive" / "more")
    os.symlink(root / "archive", other / "loop")  # a loop must not hang the check
    assert check_path("archive", [root, other], root).name == "archive"


def test_allowed_roots_come_from_the_manifest_folder_the_environment_and_the_setting(manifest, tmp_path, monkeypatch):
    extra, configured = tmp_path / "extra", tmp_path / "configured"
    extra.mkdir()
    configured.mkdir()
    monkeypatch.setenv(paths.ROOTS_ENV, f"{extra}{os.pathsep}{extra}")
    paths.add_root(manifest, configured)
    paths.add_root(manifest, configured)
    roots = paths.allowed_roots(manifest.path, manifest)
    assert roots == [manifest.path.parent, extra, configured]
    paths.remove_root(manifest, configured)
    assert configured not in paths.allowed_roots(manifest.path, manifest)
    with pytest.raises(PathRefused):
        paths.add_root(manifest, tmp_path / "not-there")


def test_sources_are_remembered_once_and_can_be_forgotten(manifest, tree):
    root, _ = tree
    folder = root / "archive"
    paths.add_source(manifest, folder)
    paths.add_source(manifest, folder)
    assert paths.sources(manifest) == [str(folder)]
    assert paths.pdf_stats(folder) == (1, 9)
    assert paths.pdf_stats(root / "gone") == (0, 0)
    paths.remove_source(manifest, str(folder))
    assert paths.sources(manifest) == []


@pytest.mark.parametrize("name, safe", [
    ("Été 1885.PDF", "Ete_1885.pdf"),
    ("../../etc/passwd", "passwd.pdf"),
    ("C:\\scans\\issue 3.pdf", "issue_3.pdf"),
    (".hidden.pdf", "hidden.pdf"),
    ("", "upload.pdf"),
    ("report.pdf.exe", "report.pdf.exe.pdf"),
    ("a" * 300 + ".pdf", "a" * 116 + ".pdf"),
])
def test_safe_filename(name, safe):
    assert paths.safe_filename(name) == safe


def test_uploads_are_stored_once_per_content_and_never_overwrite(tmp_path):
    folder = tmp_path / "uploads"
    first = paths.save_upload(folder, "issue.pdf", io.BytesIO(b"%PDF one"))
    again = paths.save_upload(folder, "issue.pdf", io.BytesIO(b"%PDF one"))
    other = paths.save_upload(folder, "issue.pdf", io.BytesIO(b"%PDF two"))
    assert first == again == folder / "issue.pdf"
    assert other == folder / "issue-1.pdf"
    assert other.read_bytes() == b"%PDF two"
    assert sorted(p.name for p in folder.iterdir()) == ["issue-1.pdf", "issue.pdf"]  # no temporary files left
