"""A page's picture figures as the score cutoff leaves them, as SQL over the pictures table.

The learned verdict stores the candidates it scored below its own cutoff too (curation.pictures.verdict), so
a page's figures that the decision reads (`picture_area`, its largest picture, with `picture_count`,
`picture_share` and the largest picture's box; on a page whose pictures a curator touched,
`pictures_included` and `pictures_auto_area`) are those of the pictures the saved score cutoff admits
(rules.score_admits). They are written again when a page is stored with scored pictures
(Manifest.save_pages), when a curator edits a picture (curation.manifest.pictures), and when the score cutoff
moves, for the pages holding a scored picture between the two cutoffs (a trigger,
curation.manifest.picture_decisions). A page without a scored picture keeps the figures its scorer wrote.
"""

from __future__ import annotations

from ..scoring.features import REFERENCE_DPI
from .rules import PICTURE_AREA_SQL, score_admits

# Pictures a curator touched: the page follows them (pages.pictures_included is set).
EDITED_SQL = "(keep IS NOT NULL OR added OR deleted OR fx0 IS NOT NULL OR rank IS NULL)"


def _of_page(columns: str) -> str:
    """The admitted pictures of the page being updated, as `y`, reading `columns`."""
    return f"SELECT {columns} FROM pictures y WHERE y.doc_id = pages.doc_id AND y.page = pages.page"


def update_sql(where: str, cutoff: str) -> str:
    """UPDATE the figures of the pages `where` (SQL on pages) that hold a scored picture, from their pictures
    that the score cutoff (SQL) admits: the scorer's pictures still found, never a curator's additions."""
    found = f"y.rank IS NOT NULL AND NOT y.added AND {score_admits('y', cutoff)}"
    content = f"(pages.width * pages.height / {REFERENCE_DPI * REFERENCE_DPI}.0)"
    # One MAX(): SQLite takes the bare box columns from the largest picture's row.
    figures = (f"COALESCE(MAX(y.area), 0), COUNT(*), CASE WHEN {content} > 0 THEN "
               f"MIN(1.0, COALESCE(SUM(y.area), 0) / {content}) ELSE 0.0 END, y.x0, y.y0, y.x1, y.y1")
    return (f"UPDATE pages SET (picture_area, picture_count, picture_share, picture_x0, picture_y0, picture_x1, "
            f"picture_y1) = ({_of_page(figures)} AND {found}) "
            f"WHERE ({where}) AND picture_area IS NOT NULL "
            f"AND EXISTS ({_of_page('1')} AND y.score IS NOT NULL)")


def refresh_edited_sql(where: str, cutoff: str) -> str:
    """UPDATE the two figures of the pages `where` (SQL on pages) that follow their pictures once a curator
    touched one: how many are included, and the largest left to the rule that the score cutoff admits."""
    area = PICTURE_AREA_SQL.replace("x.", "y.")
    included = f"CASE WHEN MAX({EDITED_SQL}) THEN COALESCE(SUM(NOT y.deleted AND COALESCE(y.keep, y.added) = 1), 0) END"
    left_to_rule = (f"CASE WHEN MAX({EDITED_SQL}) THEN MAX(CASE WHEN NOT y.deleted AND NOT y.added AND y.keep IS NULL "
                    f"AND {score_admits('y', cutoff)} THEN {area} END) END")
    return (f"UPDATE pages SET (pictures_included, pictures_auto_area) = ({_of_page(f'{included}, {left_to_rule}')}) "
            f"WHERE {where}")
