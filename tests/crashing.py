"""A task function that kills its worker process on one page, as a MuPDF segfault would."""

import os

from curation.ingest import run_task

CRASH_PAGE = 5


def run_task_crashing_on_page_5(task):
    if task.pages is not None and task.path.endswith("a.pdf") and CRASH_PAGE in task.pages:
        os._exit(139)
    return run_task(task)
