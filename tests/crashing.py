"""Task functions that misbehave in a worker as hostile pages do: crash it, hang, or ask for too much memory."""

import os
import time

from curation.runs.ingest_task import run_task
from curation.scoring import scorer

CRASH_PAGE = 5


def run_task_crashing_on_page_5(task):
    if task.pages is not None and task.path.endswith("a.pdf") and CRASH_PAGE in task.pages:
        os._exit(139)
    return run_task(task)


def run_task_hanging_on_page_3(task):
    """Page 3 of b.pdf never finishes, as a page drawing a pathological pattern."""
    if task.pages is not None and task.path.endswith("b.pdf") and 3 in task.pages:
        time.sleep(3600)
    return run_task(task)


def read_crops_crashing_on_page_3(task):
    """The picture job's reader, killed by the third page (index 2) as by a page that crashes MuPDF."""
    from curation.runs.embed import read_crops

    if any(number == 2 for number, _ in task.pages):
        os._exit(139)
    return read_crops(task)


def sleep_on_3(task):
    if task == 3:
        time.sleep(3600)
    return task * 10


def run_task_without_render_cap(task):
    """The scorer with no cap on render size: a giant page then asks MuPDF for gigabytes."""
    scorer.MAX_RENDER_PIXELS = 10**12
    return run_task(task)
