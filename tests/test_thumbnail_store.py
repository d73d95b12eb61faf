"""Where thumbnails are kept (sqlite, folder, none): the setting, ingest and rescore, every reader, the pages."""

import pytest
from click.testing import CliRunner

from apptest_support import filled_db, grid_cards, page, ran, texts, thumbnail
from conftest import small_pdf
from curation import Manifest, views
from curation.cli import cli
from curation.manifest import thumbnail_store
from curation.runs import sample
from test_app_ingest import db  # noqa: F401  (the pages' manifest, with the archive folder allowed)

JPEG = b"\xff\xd8"


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def pdfs(tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "issue-0.pdf", pages=3, seed=0)
    return folder


def scored_keys(manifest):
    return [(row["doc_id"], row["page"]) for row in manifest.pages()]


def stored_files(db, pictures: bool = False):
    """The pages' thumbnail files beside the manifest `db`; with `pictures`, its pictures' cards instead."""
    folder = thumbnail_store.folder_of(db)
    files = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.jpg")) if folder.exists() else []
    return [name for name in files if ("-picture-" in name) == pictures]


@pytest.mark.parametrize("store", list(thumbnail_store.STORES))
def test_each_store_round_trips_through_ingest_and_the_views(tmp_path, pdfs, store):
    db = tmp_path / "m.sqlite"
    run("ingest", pdfs, "--db", db, "--workers", 1, "--thumbnails", store, "-q")
    with Manifest(db) as manifest:
        assert manifest.thumbnail_store == store
        keys = scored_keys(manifest)
        assert len(keys) == 3
        in_table = manifest.conn.execute("SELECT COUNT(*) FROM thumbnails").fetchone()[0]
        sha256 = manifest.documents()[0]["sha256"]
        stored = views.thumbnails(manifest, keys)
        drawn = views.thumbnails(manifest, keys, draw_missing=True)
        pictures = list(manifest.picture_rows())
        cards_in_table = manifest.conn.execute("SELECT COUNT(*) FROM picture_thumbnails").fetchone()[0]
        cards = manifest.picture_cards(pictures)
    files, card_files = stored_files(db), stored_files(db, pictures=True)
    assert pictures  # the pictures' cards go where the pages' thumbnails go
    if store == "none":
        assert (in_table, files, stored) == (0, [], {})
        assert (cards_in_table, card_files, cards) == (0, [], {})
    else:
        assert set(stored) == set(keys) and all(jpeg[:2] == JPEG for jpeg in stored.values())
        assert in_table == (3 if store == "sqlite" else 0)
        assert files == ([f"{sha256}/{n}.jpg" for n in range(3)] if store == "folder" else [])
        assert set(cards) == {row["id"] for row in pictures} and all(jpeg[:2] == JPEG for jpeg in cards.values())
        assert (cards_in_table, len(card_files)) == ((len(pictures), 0) if store == "sqlite" else (0, len(pictures)))
    # Whatever the store, a page with its PDF at hand shows a thumbnail.
    assert set(drawn) == set(keys) and all(jpeg[:2] == JPEG for jpeg in drawn.values())


def test_none_keeps_the_manifest_small(tmp_path):
    sizes = {}
    for store in thumbnail_store.STORES:
        db = tmp_path / f"{store}.sqlite"
        with Manifest(db) as manifest:
            manifest.thumbnail_store = store
            sample.fill_manifest(manifest, documents=2, pages=200, thumbnails=[bytes(8000), bytes(9000)])
            manifest.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sizes[store] = db.stat().st_size
    assert sizes["none"] < sizes["sqlite"] / 5
    assert sizes["folder"] < sizes["sqlite"] / 5
    assert len(stored_files(tmp_path / "folder.sqlite")) == 400 and stored_files(tmp_path / "none.sqlite") == []


def test_the_setting_survives_a_rerun_and_rescore_follows_a_change(tmp_path, pdfs):
    db = tmp_path / "m.sqlite"
    run("ingest", pdfs, "--db", db, "--workers", 1, "--thumbnails", "folder", "-q")
    small_pdf(pdfs / "issue-1.pdf", pages=2, seed=1)
    run("ingest", pdfs, "--db", db, "--workers", 1, "-q")  # no --thumbnails: the saved setting holds
    assert len(stored_files(db)) == 5
    assert "thumbnails: folder" in run("settings", "--db", db)

    # Changing the setting moves nothing: the folder's thumbnails stay readable...
    assert "thumbnails: sqlite" in run("settings", "--db", db, "--thumbnails", "sqlite")
    with Manifest(db) as manifest:
        keys = scored_keys(manifest)
        assert len(views.thumbnails(manifest, keys)) == 5
    # ...and a rescore puts each page's thumbnail in the store set now, and only there.
    run("rescore", "--db", db, "--all", "--workers", 1, "-q")
    assert stored_files(db) == [] and stored_files(db, pictures=True) == []
    with Manifest(db) as manifest:
        assert manifest.conn.execute("SELECT COUNT(*) FROM thumbnails").fetchone()[0] == 5
        assert len(views.thumbnails(manifest, keys)) == 5
    run("settings", "--db", db, "--thumbnails", "none")
    run("rescore", "--db", db, "--all", "--workers", 1, "-q")
    with Manifest(db) as manifest:
        assert views.thumbnails(manifest, keys) == {}


def test_a_missing_or_unreadable_file_reads_as_no_thumbnail(tmp_path):
    db = tmp_path / "m.sqlite"
    with Manifest(db) as manifest:
        manifest.thumbnail_store = "folder"
        (doc_id,) = sample.fill_manifest(manifest, documents=1, pages=3, thumbnails=[thumbnail()])
        sha256 = manifest.document(doc_id)["sha256"]
        folder = manifest.thumbnail_folder
        thumbnail_store.file_of(folder, sha256, 0).unlink()
        thumbnail_store.file_of(folder, sha256, 1).unlink()
        thumbnail_store.file_of(folder, sha256, 1).mkdir()  # something that is not a file
        assert set(views.thumbnails(manifest, [(doc_id, 0), (doc_id, 1), (doc_id, 2)])) == {(doc_id, 2)}
        # Its PDF is not at hand either: nothing to draw, and no error.
        assert set(views.thumbnails(manifest, [(doc_id, 0)], draw_missing=True)) == set()


def test_thumbnails_of_documents_the_manifest_does_not_hold_are_removed(tmp_path, pdfs):
    db = tmp_path / "m.sqlite"
    orphan = thumbnail_store.folder_of(db) / ("ab" * 32)
    thumbnail_store.write_file(orphan / "0.jpg", thumbnail())  # left by a manifest deleted and made again
    unrelated = thumbnail_store.folder_of(db) / "notes"
    unrelated.mkdir()
    run("ingest", pdfs, "--db", db, "--workers", 1, "--thumbnails", "folder", "-q")
    assert not orphan.exists() and unrelated.exists()
    assert len(stored_files(db)) == 3


def test_an_unknown_store_is_refused(manifest):
    with pytest.raises(ValueError, match="unknown thumbnail store"):
        manifest.thumbnail_store = "s3"
    manifest.set_setting("thumbnails", "s3")  # written by someone else: read as the default
    assert manifest.thumbnail_store == thumbnail_store.DEFAULT_STORE


def test_review_and_threshold_render_when_no_thumbnail_is_kept(db):
    with Manifest(db) as manifest:
        manifest.thumbnail_store = "none"
    filled_db(db, documents=1, pages=30)  # rows only: no PDF to draw from
    with Manifest(db) as manifest:
        assert manifest.conn.execute("SELECT COUNT(*) FROM thumbnails").fetchone()[0] == 0
    at = ran(page("pages/review.py"))
    assert len(grid_cards(at)) == 30
    assert " ".join(grid_cards(at).values()).count("No thumbnail: none is kept") == 30
    at = ran(page("pages/threshold.py"))
    assert "No thumbnail" in texts(at)


def test_review_draws_thumbnails_from_the_pdfs_when_none_are_kept(db, pdfs):
    run("ingest", pdfs, "--db", db, "--workers", 1, "--thumbnails", "none", "-q")
    at = ran(page("pages/review.py"))
    assert len(grid_cards(at)) == 3
    assert "No thumbnail" not in texts(at) + " ".join(grid_cards(at).values())


def test_the_ingest_page_shows_and_saves_the_store(db, pdfs):
    at = page("pages/ingest.py")
    at = ran(at)
    at.text_input[0].input(str(pdfs))
    next(b for b in at.button if b.label == "Add").click()
    ran(at)
    choice = at.selectbox(key="thumbnails")
    assert choice.value == "sqlite"
    choice.set_value("folder")
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.thumbnail_store == "folder"
