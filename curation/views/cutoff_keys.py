"""Each picture's key on the cutoffs' grids, in SQL: what a rule's table of kept pictures counts
(curation.views.cutoff_counts, whose docstring says why a key and whether σ counts decide a picture)."""

from __future__ import annotations

from ..manifest.rules import LIVE_DOCUMENT_SQL, PICTURE_AREA_SQL, score_admits

SIGMA_GRID = 10  # σ cutoffs per unit: the slider's step of 0.1
AREA_GRID = 100  # area cutoffs per square inch: the slider's step of 0.01
AREA_TOP = 1000 * AREA_GRID  # the number input's largest cutoff, 1,000 sq in, as a grid step
ALWAYS = 1e300  # a key every cutoff on the grid keeps
# A picture's cells packed in one 32-bit code (the curators' part keeps a row a picture at worst: 1.2 M rows at
# 4 M pages and 540,000 overrides): whether σ counts, the σ cell (σ of 8-bit grey is at most 127.5) and the key cell.
SIGMA_BITS, KEY_BITS = 11, 17
SIGMA_TOP = (1 << SIGMA_BITS) - 2  # the largest σ cutoff on the grid: a σ cell holds one more

_INK = "p.ink_tone >= :ink_tone_min"
_MODEL = "sg.keep"  # the model's suggestion, joined once (rules.MODEL_SQL reads it a subquery at a time)


def _rule_key(rule: str, area: str) -> tuple[str, bool]:
    """COALESCE(rules._rule_with_area(area), 0) as (key, needs σ)."""
    if rule == "sigma":
        return str(ALWAYS), True
    key = f"CASE WHEN {_INK} THEN {area} END"
    if rule == "model":
        key = f"CASE WHEN {_MODEL} = 1 THEN {ALWAYS} WHEN {_MODEL} IS NULL THEN {key} END"
    return key, False


def key_sql(rule: str, decided: bool = True) -> tuple[str, str]:
    """The key (NULL: never kept) and whether σ counts (0/1) of picture x on page p under override o, under `rule`
    at the saved score cutoff: rules.EXPORTED_SQL as `a <= key AND (not needs OR σ > t)`. Not `decided`: as if
    no curator had touched the page or its pictures (the rule alone, on the pictures as found)."""
    admitted = score_admits() if decided else "(x.score IS NULL OR x.score >= :picture_score_min)"
    own, own_sigma = _rule_key(rule, PICTURE_AREA_SQL if decided else "x.area")
    picture = f"CASE WHEN NOT {admitted} THEN NULL ELSE {own} END"
    picture_sigma = admitted if own_sigma else "0"
    if decided:
        picture = (f"CASE WHEN x.deleted OR o.keep = 0 THEN NULL WHEN x.keep IS NOT NULL THEN "
                   f"CASE WHEN x.keep THEN {ALWAYS} END WHEN x.added THEN {ALWAYS} ELSE {picture} END")
        picture_sigma = f"(x.keep IS NULL AND NOT x.added AND {picture_sigma})"
    # The picture rule's page: COALESCE(area >= a AND ink, σ > t): σ counts where the area or the ink is missing.
    area_rule = (f"CASE WHEN p.ink_tone < :ink_tone_min THEN NULL WHEN p.picture_area IS NULL THEN {ALWAYS} "
                 "ELSE p.picture_area END")
    area_rule_sigma = "(p.picture_area IS NULL OR p.ink_tone IS NULL)"
    if rule == "sigma":
        page, page_sigma = str(ALWAYS), "1"
    elif rule == "model":
        page = f"CASE WHEN {_MODEL} = 1 THEN {ALWAYS} WHEN {_MODEL} IS NULL THEN {area_rule} END"
        page_sigma = f"({_MODEL} IS NULL AND {area_rule_sigma})"
    else:
        page, page_sigma = area_rule, area_rule_sigma
    if decided:
        auto, auto_sigma = _rule_key(rule, "p.pictures_auto_area")
        page = (f"CASE WHEN o.keep IS NOT NULL THEN CASE WHEN o.keep THEN {ALWAYS} END "
                f"WHEN p.pictures_included IS NOT NULL THEN CASE WHEN p.pictures_included > 0 THEN {ALWAYS} "
                f"ELSE {auto} END ELSE {page} END")
        page_sigma = (f"CASE WHEN o.keep IS NOT NULL THEN 0 WHEN p.pictures_included IS NOT NULL THEN "
                      f"(p.pictures_included <= 0 AND {int(auto_sigma)}) ELSE {page_sigma} END")
    return f"MIN(({page}), ({picture}))", f"(({page_sigma}) OR {picture_sigma})"


_JOINS = ("JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page JOIN documents d ON d.id = x.doc_id "
          "LEFT JOIN overrides o ON o.doc_id = x.doc_id AND o.page = x.page "
          "LEFT JOIN suggestions sg ON sg.doc_id = x.doc_id AND sg.page = x.page")
_COUNTED = f"{LIVE_DOCUMENT_SQL} AND p.status = 'ok'"
# The pages a curator decided: an override, or an edit of their pictures (rules.py: pictures_included).
_DECIDED_PAGES = ("(SELECT doc_id, page FROM overrides UNION "
                  "SELECT doc_id, page FROM pages INDEXED BY pages_edited WHERE pictures_included IS NOT NULL)")


def _rows_sql(rule: str, part: str, docs: str = "") -> str:
    """Each picture's (document, key, needs σ, σ, sign). "rule": every picture the scoring found as the rule alone
    decides it (the document left out: 0); "decided": on the pages a curator decided (of the documents `docs`,
    SQL, or all), each picture as decided (+1, deleted ones left out) and, unless a curator added it, as the rule
    alone would (-1), so that the two parts add up to the pictures as they are decided."""
    joins = _JOINS if rule == "model" else _JOINS.rsplit(" LEFT JOIN suggestions", 1)[0]
    if part == "rule":
        key, needs = key_sql(rule, decided=False)
        return (f"SELECT 0 AS doc, {key} AS key, {needs} AS needs, p.sigma AS sigma, 1 AS sign FROM pictures x {joins} "
                f"WHERE {_COUNTED} AND NOT x.added")
    source = f"FROM {_DECIDED_PAGES} k CROSS JOIN pictures x ON x.doc_id = k.doc_id AND x.page = k.page {joins}"
    where = f"{_COUNTED} AND k.doc_id IN ({docs})" if docs else _COUNTED
    exact, undecided = key_sql(rule), key_sql(rule, decided=False)
    return (f"SELECT x.doc_id AS doc, {exact[0]} AS key, {exact[1]} AS needs, p.sigma AS sigma, 1 AS sign {source} "
            f"WHERE {where} AND NOT x.deleted UNION ALL "
            f"SELECT x.doc_id, {undecided[0]}, {undecided[1]}, p.sigma, -1 {source} WHERE {where} AND NOT x.added")


def cells_sql(rule: str, part: str, docs: str = "") -> str:
    """Pictures counted by document and packed cells (needs σ, σ cell, key cell). σ cell: how many σ cutoffs on the grid (0, 0.1, ...) lie
    under the page's σ; key cell: how many area cutoffs (0, 0.01, ..., 1000) lie at or under the key. Each is
    worked out from the float's product and corrected by one step where the product rounded across a cutoff,
    so `σ > t` and `key >= a` hold exactly as SQL compares them."""
    top = AREA_TOP // AREA_GRID + 1
    return (
        f"SELECT doc, (needs << {SIGMA_BITS + KEY_BITS}) | (MIN(CASE WHEN needs THEN "  # SQLite: << and | bind alike
        f"COALESCE(sf + (sf / 10.0 < sigma) - ((sf - 1) / 10.0 >= sigma), 0) ELSE 0 END, {SIGMA_TOP + 1}) << {KEY_BITS}) | "
        f"CASE WHEN key IS NULL OR key < 0 THEN 0 WHEN key >= {top} THEN {AREA_TOP + 1} "
        f"ELSE MIN(kf + ((kf + 1) / 100.0 <= key) - (kf / 100.0 > key) + 1, {AREA_TOP + 1}) END AS code, SUM(sign) "
        f"FROM (SELECT doc, key, needs, sigma, sign, CAST(sigma * {SIGMA_GRID} AS INTEGER) AS sf, "
        f"CAST(MIN(MAX(key, 0), {top}) * {AREA_GRID} AS INTEGER) AS kf "
        f"FROM ({_rows_sql(rule, part, docs)} LIMIT -1) LIMIT -1) "
        "GROUP BY doc, code"
    )
