"""A process pool's forkserver imports this first (curation/runs/worker_pool.py's preload): the forkserver dies
with the job that started it, each worker it forks dies with the forkserver, and the resource tracker, whose pipe
only the job and the workers held, then ends too (see guards.lifeline). Nothing else imports it: importing it ties
the importer to its parent.

A forkserver whose job died before this ran needs no help: it ends once nothing holds its "alive" pipe, and no worker
holds it before the forkserver has finished its imports.
"""

from .lifeline import die_with_parent, forks_die_with_this_process

die_with_parent()
forks_die_with_this_process()
