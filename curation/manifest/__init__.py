"""The manifest: the SQLite file every stage writes to and reads from, where thumbnails are kept, and
the views the dashboard shows of it."""
