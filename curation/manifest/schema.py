"""The manifest's schema: the migrations that build it, one version at a time (Manifest.migrate runs them)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from . import finders, picture_decisions, picture_embeddings, picture_inputs, picture_thumbnails, pictures
from .rules import DEFAULT_THRESHOLD, UNSCORED_EXPORTED_SQL

KEEP_RULES_MIGRATION = """
    INSERT INTO settings (key, value)
    SELECT 'picture_finder', 'rules'
    WHERE EXISTS (SELECT 1 FROM pages) AND NOT EXISTS (SELECT 1 FROM settings WHERE key = 'picture_finder');
"""

# Each entry moves the schema one version up. Never edit a released entry: append a new one.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE documents (
        id INTEGER PRIMARY KEY,
        sha256 TEXT NOT NULL UNIQUE,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        pages INTEGER,
        status TEXT NOT NULL DEFAULT 'pending',
        error TEXT,
        added_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX documents_path ON documents(path);
    CREATE INDEX documents_status ON documents(status);

    -- Remembers each file's hash by its stat, so a re-run reads only new or changed files.
    CREATE TABLE files (
        path TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        sha256 TEXT NOT NULL
    );

    CREATE TABLE pages (
        doc_id INTEGER NOT NULL REFERENCES documents(id),
        page INTEGER NOT NULL,
        status TEXT NOT NULL,
        sigma REAL,
        width INTEGER,
        height INTEGER,
        method TEXT,
        error TEXT,
        scored_at TEXT NOT NULL,
        PRIMARY KEY (doc_id, page)
    );
    CREATE INDEX pages_sigma ON pages(sigma);

    CREATE TABLE thumbnails (
        doc_id INTEGER NOT NULL,
        page INTEGER NOT NULL,
        jpeg BLOB NOT NULL,
        PRIMARY KEY (doc_id, page)
    );

    CREATE TABLE overrides (
        doc_id INTEGER NOT NULL,
        page INTEGER NOT NULL,
        keep INTEGER NOT NULL CHECK (keep IN (0, 1)),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (doc_id, page)
    );

    CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );

    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        pid INTEGER,
        args TEXT,
        done INTEGER NOT NULL DEFAULT 0,
        total INTEGER NOT NULL DEFAULT 0,
        rate REAL,
        eta REAL,
        message TEXT,
        stop_requested INTEGER NOT NULL DEFAULT 0,
        started_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX jobs_status ON jobs(status);
    """,
    # Per-page captions, edited on the Review page and used by the export's caption template.
    """
    CREATE TABLE captions (
        doc_id INTEGER NOT NULL,
        page INTEGER NOT NULL,
        text TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (doc_id, page)
    );
    """,
    # Features beside sigma (curation.scoring.features), the model's suggestions and near-duplicate groups.
    """
    ALTER TABLE pages ADD COLUMN sigma_content REAL;
    ALTER TABLE pages ADD COLUMN ink_tone REAL;
    ALTER TABLE pages ADD COLUMN ink_coverage REAL;
    ALTER TABLE pages ADD COLUMN picture_share REAL;
    ALTER TABLE pages ADD COLUMN picture_x0 INTEGER;
    ALTER TABLE pages ADD COLUMN picture_y0 INTEGER;
    ALTER TABLE pages ADD COLUMN picture_x1 INTEGER;
    ALTER TABLE pages ADD COLUMN picture_y1 INTEGER;
    ALTER TABLE pages ADD COLUMN phash INTEGER;
    ALTER TABLE pages ADD COLUMN features_version INTEGER;
    CREATE INDEX pages_picture_share ON pages(picture_share);

    CREATE TABLE suggestions (
        doc_id INTEGER NOT NULL,
        page INTEGER NOT NULL,
        keep INTEGER NOT NULL,
        confidence REAL NOT NULL,
        PRIMARY KEY (doc_id, page)
    );

    CREATE TABLE duplicates (
        doc_id INTEGER NOT NULL,
        page INTEGER NOT NULL,
        group_id INTEGER NOT NULL,
        PRIMARY KEY (doc_id, page)
    );
    CREATE INDEX duplicates_group ON duplicates(group_id);
    """,
    # Page analysis (curation.scoring.pictures): the largest picture's size, every picture's box, text size.
    """
    ALTER TABLE pages ADD COLUMN picture_area REAL;
    ALTER TABLE pages ADD COLUMN picture_count INTEGER;
    ALTER TABLE pages ADD COLUMN text_height REAL;
    CREATE INDEX pages_picture_area ON pages(picture_area);

    CREATE TABLE pictures (
        doc_id INTEGER NOT NULL,
        page INTEGER NOT NULL,
        n INTEGER NOT NULL,
        x0 INTEGER NOT NULL,
        y0 INTEGER NOT NULL,
        x1 INTEGER NOT NULL,
        y1 INTEGER NOT NULL,
        area REAL NOT NULL,
        PRIMARY KEY (doc_id, page, n)
    );
    """,
    # Who did what (curation.manifest.history): one row per action, one per page or setting it changed.
    """
    CREATE TABLE history (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        user TEXT NOT NULL,
        kind TEXT NOT NULL,
        note TEXT,
        description TEXT NOT NULL DEFAULT '',
        changes INTEGER NOT NULL DEFAULT 0,
        undoes INTEGER,
        undone_by INTEGER
    );
    CREATE INDEX history_user ON history(user, id);
    CREATE INDEX history_at ON history(at);

    -- old and new keep their type: an override's keep (1, 0; NULL: none), a caption's text, a setting's value.
    CREATE TABLE history_changes (
        action_id INTEGER NOT NULL,
        field TEXT NOT NULL,
        doc_id INTEGER,
        page INTEGER,
        name TEXT,
        old,
        new
    );
    CREATE INDEX history_changes_action ON history_changes(action_id, doc_id, page);
    CREATE INDEX history_changes_page ON history_changes(doc_id, page) WHERE doc_id IS NOT NULL;
    """,
    # Pictures as rows (curation.manifest.pictures): a stable id and number, a curator's decision, box and caption.
    pictures.MIGRATION,
    # The Pictures view's screens read through an index: by size as the curator left it (either way), and the
    # few pictures captioned by a curator or no longer found, without a walk over every picture.
    pictures.INDEXES,
    # The dashboard's counts by decision (curation.manifest.aggregates): pages counted in bins, rebuilt when the
    # counter of what they count moved. Triggers move it with every change to a page's figures or a document's
    # status; the suggestions' one writer moves its own (replace_suggestions). Overridden pages and pages whose
    # pictures a curator edited are read apart (their own index), again when their counter ('decided') moved.
    """
    CREATE TABLE changes (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO changes (name, value) VALUES ('pages', 0), ('suggestions', 0), ('decided', 0);
    CREATE TABLE page_bins (
        sigma_bin INTEGER,
        area_bin INTEGER,
        kind INTEGER NOT NULL,
        model INTEGER NOT NULL,
        status TEXT NOT NULL,
        pages INTEGER NOT NULL
    );
    CREATE INDEX pages_edited ON pages(pictures_included) WHERE pictures_included IS NOT NULL;
    -- The model's pages at the edge, least sure first (views.borderline), from the index's ends.
    CREATE INDEX suggestions_confidence ON suggestions(keep, confidence);
    CREATE TRIGGER pages_added AFTER INSERT ON pages
    BEGIN UPDATE changes SET value = value + 1 WHERE name = 'pages'; END;
    CREATE TRIGGER pages_removed AFTER DELETE ON pages
    BEGIN UPDATE changes SET value = value + 1 WHERE name = 'pages'; END;
    CREATE TRIGGER pages_measured AFTER UPDATE OF doc_id, page, status, sigma, picture_area, ink_tone ON pages
    BEGIN UPDATE changes SET value = value + 1 WHERE name = 'pages'; END;
    CREATE TRIGGER documents_status AFTER UPDATE OF status ON documents
    BEGIN UPDATE changes SET value = value + 1 WHERE name = 'pages'; END;
    CREATE TRIGGER documents_removed AFTER DELETE ON documents
    BEGIN UPDATE changes SET value = value + 1 WHERE name = 'pages'; END;
    CREATE TRIGGER overrides_added AFTER INSERT ON overrides
    BEGIN UPDATE changes SET value = value + 1 WHERE name = 'decided'; END;
    CREATE TRIGGER overrides_changed AFTER UPDATE ON overrides
    BEGIN UPDATE changes SET value = value + 1 WHERE name = 'decided'; END;
    CREATE TRIGGER overrides_removed AFTER DELETE ON overrides
    BEGIN UPDATE changes SET value = value + 1 WHERE name = 'decided'; END;
    CREATE TRIGGER pages_pictures_edited AFTER UPDATE OF pictures_included, pictures_auto_area ON pages
    BEGIN UPDATE changes SET value = value + 1 WHERE name = 'decided'; END;
    """,
    # Each picture's decision under the saved settings, and the pictures counted per document, kept by triggers
    # (curation.manifest.picture_decisions): the Pictures view's counts and kept/excluded screens from an index.
    picture_decisions.migration(DEFAULT_THRESHOLD, UNSCORED_EXPORTED_SQL),
    # A saved cutoff decides again only the pictures its move can change (a σ cutoff: the pages between the
    # two; an area cutoff: the pictures and pages whose area lies between), walking an index; a rule switch,
    # every picture in one join.
    picture_decisions.settings_triggers(DEFAULT_THRESHOLD, UNSCORED_EXPORTED_SQL, picture_decisions.UNSCORED_SETTINGS),
    # Each document's scored and failed pages, kept by triggers: the Ingest page's table reads them at any size
    # instead of counting the pages table per document. A rescored page is written with INSERT OR REPLACE,
    # which fires no DELETE trigger (recursive_triggers stays off), so the row it replaces is taken off first.
    """
    ALTER TABLE documents ADD COLUMN scored INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE documents ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
    UPDATE documents SET
        scored = (SELECT COUNT(*) FROM pages p WHERE p.doc_id = documents.id AND p.status = 'ok'),
        failed = (SELECT COUNT(*) FROM pages p WHERE p.doc_id = documents.id AND p.status = 'failed');
    CREATE TRIGGER pages_count_replaced BEFORE INSERT ON pages
    BEGIN
        UPDATE documents SET
            scored = scored - (SELECT COUNT(*) FROM pages p WHERE p.doc_id = NEW.doc_id AND p.page = NEW.page
                               AND p.status = 'ok'),
            failed = failed - (SELECT COUNT(*) FROM pages p WHERE p.doc_id = NEW.doc_id AND p.page = NEW.page
                               AND p.status = 'failed')
        WHERE id = NEW.doc_id;
    END;
    CREATE TRIGGER pages_count_added AFTER INSERT ON pages
    BEGIN
        UPDATE documents SET scored = scored + (NEW.status = 'ok'), failed = failed + (NEW.status = 'failed')
        WHERE id = NEW.doc_id;
    END;
    CREATE TRIGGER pages_count_removed AFTER DELETE ON pages
    BEGIN
        UPDATE documents SET scored = scored - (OLD.status = 'ok'), failed = failed - (OLD.status = 'failed')
        WHERE id = OLD.doc_id;
    END;
    CREATE TRIGGER pages_count_changed AFTER UPDATE OF doc_id, status ON pages
    WHEN OLD.doc_id IS NOT NEW.doc_id OR OLD.status IS NOT NEW.status
    BEGIN
        UPDATE documents SET scored = scored - (OLD.status = 'ok'), failed = failed - (OLD.status = 'failed')
        WHERE id = OLD.doc_id;
        UPDATE documents SET scored = scored + (NEW.status = 'ok'), failed = failed + (NEW.status = 'failed')
        WHERE id = NEW.doc_id;
    END;
    """,
    # Review's sorts walk an index in their whole order, ties included, either way: a screen at either end
    # is read from the index, where a sort of the ties (millions of pages without a picture) took a second.
    # The picture area's index is descending, as "largest first" reads it (NULLs last, then documents in order).
    # The few failed pages have an index of their own, which the Failed filter's screens are read from.
    """
    DROP INDEX pages_sigma;
    CREATE INDEX pages_sigma ON pages(sigma, doc_id, page);
    DROP INDEX pages_picture_area;
    CREATE INDEX pages_picture_area ON pages(picture_area DESC, doc_id, page);
    CREATE INDEX pages_failed ON pages(status) WHERE status = 'failed';
    """,
    # Who did what names the person as their sign-in provider does, issuer and subject, beside the address
    # (curation.manifest.history): the address is a label, the pair the identity. NULL without sign-in.
    """
    ALTER TABLE history ADD COLUMN issuer TEXT;
    ALTER TABLE history ADD COLUMN subject TEXT;
    """,
    # The learned verdict's score of each picture it found (curation.pictures.verdict); NULL where the
    # rule-based finder found it or a curator drew it.
    """
    ALTER TABLE pictures ADD COLUMN score REAL;
    """,
    # A picture's kind and the curator's "no legend" / "no model caption" (curation.manifest.pictures), and its
    # thumbnail cut as the export crops it (curation.manifest.picture_thumbnails).
    pictures.MIGRATION_KINDS + picture_thumbnails.MIGRATION,
    # Each picture's embedding, for the curator's tools that compare pictures (curation.manifest.picture_embeddings).
    picture_embeddings.MIGRATION,
    # The learned verdict's score cutoff (picture_score_min) joins the decision: ingest keeps the candidates it
    # scored under its own cutoff too, and a picture counts at or above the saved cutoff
    # (curation.manifest.rules, page_figures); the triggers that decide are made again with it.
    picture_decisions.score_cutoff_migration(DEFAULT_THRESHOLD),
    # Each new picture's input to the picture job's network, cut by ingest's worker and kept until the picture
    # is embedded (curation.manifest.picture_inputs).
    picture_inputs.MIGRATION,
    # Threshold's counts of the pictures each rule keeps at every cutoff, as the counting job and the jobs that
    # change the pages or decisions leave them (curation.views.cutoff_counts): a row a rule and part, the
    # state it was counted at (JSON) and its cells (32-bit integers, three a row).
    """
    CREATE TABLE cutoff_parts (
        rule TEXT NOT NULL,
        part TEXT NOT NULL,
        state TEXT NOT NULL,
        cells BLOB NOT NULL,
        PRIMARY KEY (rule, part)
    );
    """,
    # Which finder found each picture, and the finders a manifest learned from its curator's boxes
    # (curation.manifest.finders).
    finders.MIGRATION,
    # The picture network became the default finder; a manifest that scored pages with the rules, the default
    # before, keeps them until a person chooses (settings.DEFAULT_PICTURE_FINDER).
    KEEP_RULES_MIGRATION,
    # Each picture's region (which pixels of its box are the picture, as the finder fitted it), and the curator's
    # mask: turned off, or rectangles painted out (curation.manifest.pictures, curation.pictures.region).
    pictures.MIGRATION_MASKS,
    # The pictures a curator set a kind on, read without a walk over every picture: the kinds learned per archive
    # start from them (curation.decisions.picture_kinds).
    "CREATE INDEX pictures_kind_set ON pictures(id) WHERE kind IS NOT NULL;",
    # The judges a manifest learned from its curator's picture decisions (curation.manifest.finders).
    finders.JUDGE_MIGRATION,
]


def statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
