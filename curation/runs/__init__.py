"""The work over a whole archive: the ingest run and its scheduler, the executors it runs on (a local
process pool or a Dask cluster), and long jobs started from the app."""
