"""Sign-in: who is using the app and what they may do.

current_user() names the person every change is recorded for (curation.manifest.history);
can_curate() says whether they may change anything (override, caption, export, ingest).
"""

import getpass


def current_user() -> str:
    return getpass.getuser()


def can_curate() -> bool:
    return True
