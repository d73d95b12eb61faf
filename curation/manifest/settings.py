"""The manifest's settings: the saved rule and cutoffs, the page time limit, the legends' languages, the
picture finder and job, where thumbnails go; each checked as it is set, and a person's change recorded."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3

from ..scoring.pictures import DEFAULT_PICTURE_AREA_MIN
from . import history, thumbnail_store
from .rules import DEFAULT_PICTURE_SCORE_MIN, DEFAULT_RULE, DEFAULT_THRESHOLD, INK_TONE_MIN, RULES

DEFAULT_PAGE_TIMEOUT = 60.0  # seconds; a page past it is skipped (a pathological pattern can take hours)
PICTURE_FINDERS = ("rules", "network", "learned")
# The network finds more of the pictures than the rules on every source it did not learn from
# (docs/picture-finder.md). A manifest that scored pages before it was the default keeps "rules" (schema.py's
# KEEP_RULES_MIGRATION saved it there), so its next ingest finds pictures as its earlier ones did.
DEFAULT_PICTURE_FINDER = "network"
# Whether the picture job (curation.runs.embed) follows ingest and rescore where the manifest never said: this
# variable's on/off, else on. A server whose CPU should not embed pictures sets it off for every manifest.
PICTURE_JOB_VARIABLE = "CURATION_PICTURE_JOB"
DEFAULT_LEGEND_LANGUAGES = "eng+deu+fra"  # English, German, French: the periodicals most often ingested

LANGUAGE_CODE = re.compile(r"^[a-z][a-z_]{1,15}$")  # Tesseract's names: eng, deu, chi_sim, ...


def language_codes(text: str) -> str:
    """'eng+deu' as Tesseract takes it, from "eng, deu" or "ENG+deu"; ValueError naming what is wrong."""
    codes = [code.strip().lower() for code in str(text).replace(",", "+").split("+") if code.strip()]
    if not codes:
        raise ValueError("name at least one legend language, e.g. eng+deu")
    bad = [code for code in codes if not LANGUAGE_CODE.match(code)]
    if bad:
        raise ValueError(f"not a Tesseract language code: {', '.join(bad)} (e.g. eng, deu, fra, frk, rus)")
    return "+".join(dict.fromkeys(codes))


class Settings:
    """The settings of a Manifest (mixed into it: uses its `conn`, `path`, `recording` and `_action`)."""

    conn: sqlite3.Connection

    def get_setting(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def set_setting(self, key: str, value) -> None:
        """Save a setting; a person's choice is recorded in the history (history.NOT_RECORDED: bookkeeping)."""
        with self.recording("setting") if key not in history.NOT_RECORDED else contextlib.nullcontext():
            old = self.get_setting(key)
            self.conn.execute(
                "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, str(value)),
            )
            if self._action is not None:
                history.record(self.conn, self._action, "setting", old, str(value), name=key)

    @property
    def threshold(self) -> float:
        return float(self.get_setting("threshold", str(DEFAULT_THRESHOLD)))

    @threshold.setter
    def threshold(self, value: float) -> None:
        self.set_setting("threshold", float(value))

    @property
    def rule(self) -> str:
        rule = self.get_setting("rule", DEFAULT_RULE)
        return rule if rule in RULES else DEFAULT_RULE

    @rule.setter
    def rule(self, value: str) -> None:
        if value not in RULES:
            raise ValueError(f"unknown rule {value!r}; one of {', '.join(RULES)}")
        self.set_setting("rule", value)

    @property
    def picture_area_min(self) -> float:
        return float(self.get_setting("picture_area_min", str(DEFAULT_PICTURE_AREA_MIN)))

    @picture_area_min.setter
    def picture_area_min(self, value: float) -> None:
        if not value >= 0:
            raise ValueError(f"picture_area_min must be 0 or more square inches, not {value!r}")
        self.set_setting("picture_area_min", float(value))

    @property
    def picture_score_min(self) -> float:
        """The learned verdict's score under which a picture it scored does not count (SAVED_SCORE_MIN_SQL)."""
        return float(self.get_setting("picture_score_min", str(DEFAULT_PICTURE_SCORE_MIN)))

    @picture_score_min.setter
    def picture_score_min(self, value: float) -> None:
        if not 0 <= value <= 1:
            raise ValueError(f"picture_score_min is a score from 0 to 1, not {value!r}")
        self.set_setting("picture_score_min", float(value))

    @property
    def page_timeout(self) -> float:
        """Seconds a page may take to be read before it is skipped (0: no limit)."""
        return float(self.get_setting("page_timeout", str(DEFAULT_PAGE_TIMEOUT)))

    @page_timeout.setter
    def page_timeout(self, value: float) -> None:
        if value < 0:
            raise ValueError("the page time limit cannot be negative")
        self.set_setting("page_timeout", float(value))

    @property
    def legend_languages(self) -> str:
        """Tesseract's languages the pictures' printed legends are read in, e.g. "eng+deu+fra"."""
        return self.get_setting("legend_languages", DEFAULT_LEGEND_LANGUAGES)

    @legend_languages.setter
    def legend_languages(self, value: str) -> None:
        """Checked for its form here; whether the languages are installed is the captions stage's to check
        (curation.captions.legend.check_languages), which ingest does again before reading."""
        self.set_setting("legend_languages", language_codes(value))

    @property
    def picture_finder(self) -> str:
        """Who finds a page's pictures at ingest: "rules" (the page analysis alone), "network" (the picture
        finder's network, curation.pictures.finder) or "learned" (the page analysis's candidates checked by the
        learned verdict, curation.pictures.verdict; slower). Never set: the network."""
        return self.get_setting("picture_finder", DEFAULT_PICTURE_FINDER)

    @picture_finder.setter
    def picture_finder(self, value: str) -> None:
        if value not in PICTURE_FINDERS:
            raise ValueError(f"the picture finder is one of {', '.join(PICTURE_FINDERS)}, not {value!r}")
        self.set_setting("picture_finder", value)

    @property
    def picture_job(self) -> bool:
        """Whether ingest and rescore are followed by the picture job (each new picture embedded, for More like
        this and the manifest's own picture model); where never set, $CURATION_PICTURE_JOB (on/off), else on."""
        saved = self.get_setting("picture_job") or os.environ.get(PICTURE_JOB_VARIABLE, "on")
        return saved.strip().lower() not in ("off", "0", "false", "no")

    @picture_job.setter
    def picture_job(self, value: bool) -> None:
        self.set_setting("picture_job", "on" if value else "off")

    @property
    def thumbnail_store(self) -> str:
        """Where thumbnails of pages scored from now on go (thumbnail_store.STORES)."""
        store = self.get_setting("thumbnails", thumbnail_store.DEFAULT_STORE)
        return store if store in thumbnail_store.STORES else thumbnail_store.DEFAULT_STORE

    @thumbnail_store.setter
    def thumbnail_store(self, value: str) -> None:
        if value not in thumbnail_store.STORES:
            raise ValueError(f"unknown thumbnail store {value!r}; one of {', '.join(thumbnail_store.STORES)}")
        self.set_setting("thumbnails", value)

    @property
    def thumbnail_folder(self):
        return thumbnail_store.folder_of(self.path)

    def decision_params(self, threshold: float | None = None, rule: str | None = None) -> dict:
        """What KEEP_SQL binds: the saved rule and cutoffs, or the ones being tried."""
        return {
            "threshold": self.threshold if threshold is None else float(threshold),
            "rule": self.rule if rule is None else rule,
            "picture_area_min": self.picture_area_min,
            "picture_score_min": self.picture_score_min,
            "picture_score_saved": self.picture_score_min,  # the cutoff the pages' figures hold (rules.PAGE_AREA_SQL)
            "ink_tone_min": INK_TONE_MIN,
        }
