"""Helper processes that end with the process that started them, however it ends (SIGKILL included).

A job's workers, killed with their job by the kernel's OOM killer, a crashed server or `kill -9`, would otherwise
live on, reparented to init, each holding its memory until someone kills it by hand.

On Linux the kernel tells a child when its parent dies: `die_with_parent()` asks it (prctl PR_SET_PDEATHSIG) for a
SIGKILL then, which ends even a process stuck in C code. Elsewhere a thread of the child watches a pipe from its
parent (`multiprocessing`'s parent sentinel, at end of file once the parent is gone) and ends it. The kernel counts
the *thread* that forked a child as its parent: a child must be started by a thread that lives as long as its
process (a job's main thread; a forkserver's, which forks every worker of a pool).

A process pool's forkserver imports `guards.lifeline_forkserver` first: it dies with the job that started it, and
each worker it forks dies with it from the worker's first instruction (`forks_die_with_this_process()`), before the
worker has read what to run. Standard library only, so that a forkserver ties itself before importing anything
heavy.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def die_with_parent() -> None:
    """End this process when its parent ends: its kernel parent on Linux, else its `multiprocessing` parent.

    A multiprocessing child whose multiprocessing parent is already gone (it died before this was asked) ends at
    once.
    """
    parent = multiprocessing.parent_process()
    if _prctl(PR_SET_PDEATHSIG, signal.SIGKILL):
        if parent is not None and not parent.is_alive():
            os._exit(1)
    elif parent is not None:
        threading.Thread(target=_end_when_gone, args=(parent.sentinel,), daemon=True,
                         name="die-with-parent").start()


def forks_die_with_this_process() -> None:
    """Every child this process forks from now on (os.fork, as a forkserver forks) asks the kernel, first thing, to
    end it when this process ends; one whose parent ended before it asked ends at once (Linux; elsewhere nothing)."""
    forking = {}
    os.register_at_fork(before=lambda: forking.update(parent=os.getpid()),
                        after_in_child=lambda: _tie_to(forking["parent"]))


def become_subreaper() -> bool:
    """Orphans among this process's descendants become its children again, rather than init's (Linux only): a
    process that wants to see every process it started, however deep, asks this. Whether it could."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def _tie_to(parent: int) -> None:
    if _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) and os.getppid() != parent:
        os._exit(1)


def _end_when_gone(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the interpreter's own libc: no library search
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
