"""Scheduling tasks on any `concurrent.futures` executor so that a run survives workers that die or never
finish: the `Scheduler`, what a task given up comes to (`Failure`) and the words its pages are failed with."""

from __future__ import annotations

import concurrent.futures as cf
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from enum import Enum

from .ingest_task import run_task
from .jobs import PROGRESS_INTERVAL, Stopped
from .worker_pool import kill_executor

CRASH_MESSAGE = "the PDF engine crashed on this page (twice, in fresh workers); skipped"


def timeout_message(seconds: float, what: str = "draw") -> str:
    return f"took longer than {seconds:g} s to {what}; skipped"


class ExecutorLost(Exception):
    """The executor itself is gone (a cluster's scheduler lost): the run ends; what finished is saved."""


class Failure(Enum):
    """What a task came to when it gave no result."""

    CRASHED = "crashed"  # its worker died, twice, the second time alone
    TIMED_OUT = "timed out"  # it ran past the time limit on its own


def split_pages(task) -> list:
    """The single-page tasks of a multi-page task; any other task as it is."""
    pages = getattr(task, "pages", None)
    if pages is None or len(pages) < 2:
        return [task]
    return [replace(task, pages=(number,)) for number in pages]


class Scheduler:
    """Runs tasks on an executor and survives workers that die or never finish.

    When a worker process dies the pool is broken and every task in flight is a suspect: each one
    is retried alone in a fresh worker. A task that crashes again alone is split into single pages,
    each run alone, so only the page that kills the engine is marked failed.

    With a `page_timeout`, no more tasks are in flight than there are workers, so a task's clock
    starts when it is handed to a worker. A task still running after the limit is abandoned: the
    executor is torn down (`kill`, its workers with it) and a new one made; the other tasks that were
    running go back to the queue; the late task is split into single pages, queued first, and a single
    page that runs past the limit on its own comes out as `Failure.TIMED_OUT`. A page that hangs inside
    a task therefore costs about twice the limit: once in its task, once alone. All of this is
    scheduling, so it holds for any `concurrent.futures` executor that `kill` can tear down.
    """

    def __init__(self, make_executor: Callable[[int], cf.Executor], workers: int,
                 task_fn: Callable = run_task, should_stop: Callable[[], bool] = lambda: False,
                 on_idle: Callable[[], None] = lambda: None, *, page_timeout: float | None = None,
                 split: Callable[[object], list] = split_pages, kill: Callable[[cf.Executor], None] = kill_executor):
        self.make_executor = make_executor
        self.workers = workers
        self.task_fn = task_fn
        self.should_stop = should_stop
        self.on_idle = on_idle
        self.page_timeout = page_timeout
        self.split = split
        self.kill = kill
        self.crashes = 0  # workers lost to a crash (each followed by retries)
        self.timeouts = 0  # executors torn down because a task ran past the limit

    def run(self, tasks: Iterable, on_result: Callable[[object, object], None],
            on_crash: Callable[[object], None], on_timeout: Callable[[object], None] | None = None) -> None:
        for task, result in self.results(tasks):
            if result is Failure.CRASHED:
                on_crash(task)
            elif result is Failure.TIMED_OUT:
                (on_timeout or on_crash)(task)
            else:
                on_result(task, result)

    def results(self, tasks: Iterable) -> Iterator[tuple[object, object]]:
        """(task, result) for every task as it finishes; result is a `Failure` for one given up.

        An exception raised by the task function is its result, not a failure.
        """
        queue = deque(tasks)
        while queue:
            suspects = yield from self._run_pool(queue)
            for task in suspects:
                yield from self._run_alone(task, split=True)

    def _run_pool(self, queue: deque):
        executor = self.make_executor(self.workers)
        in_flight: dict[cf.Future, tuple[object, float]] = {}
        abandon = True
        try:
            self._warm_up(executor)
            slots = getattr(executor, "slots", self.workers)  # an executor may have fewer workers than planned
            most = slots if self.page_timeout else 2 * slots
            broken_at_submit = not self._fill(executor, queue, in_flight, most)
            if broken_at_submit and not in_flight:
                raise RuntimeError("the worker processes die as they start; nothing can be read")
            while in_flight:
                done, _ = cf.wait(in_flight, timeout=PROGRESS_INTERVAL, return_when=cf.FIRST_COMPLETED)
                finished, broken = [], []
                for future in done:
                    task, _ = in_flight.pop(future)
                    outcome = _outcome(future)
                    (broken if outcome is Failure.CRASHED else finished).append((task, outcome))
                if broken or broken_at_submit:
                    self.crashes += 1
                    yield from finished
                    return [task for task, _ in broken] + [task for task, _ in in_flight.values()]
                # Workers get their next task before the results are saved: they never wait on the manifest.
                broken_at_submit = not self._fill(executor, queue, in_flight, most)
                yield from finished
                late = [future for future, (_, started) in in_flight.items() if self._late(started)]
                if late:
                    self.timeouts += 1
                    yield from self._give_up_late(late, in_flight, queue)
                    return []
                self.on_idle()
                if self.should_stop():
                    raise Stopped()
            abandon = False
            return []
        finally:
            if abandon:
                self.kill(executor)
            else:
                executor.shutdown(wait=True)

    def _fill(self, executor: cf.Executor, queue: deque, in_flight: dict, most: int) -> bool:
        """Hand queued tasks to the executor up to `most` in flight; False if it broke meanwhile."""
        while queue and len(in_flight) < most:
            task = queue.popleft()
            try:
                in_flight[executor.submit(self.task_fn, task)] = (task, time.monotonic())
            except cf.BrokenExecutor:  # a worker died before this task could be handed over
                queue.appendleft(task)
                return False
        return True

    def _give_up_late(self, late: list[cf.Future], in_flight: dict, queue: deque):
        """Late tasks split into pages queued first, single late pages failed; the rest queued again."""
        again = [in_flight[future][0] for future in in_flight if future not in late]
        for future in late:
            task = in_flight[future][0]
            pieces = self.split(task)
            if len(pieces) > 1:
                again[:0] = pieces
            else:
                yield task, Failure.TIMED_OUT
        queue.extendleft(reversed(again))

    def _late(self, started: float) -> bool:
        return self.page_timeout is not None and time.monotonic() - started > self.page_timeout

    def _warm_up(self, executor: cf.Executor) -> None:
        # Starting workers (the forkserver's first start imports MuPDF and OpenCV) is not a page's time.
        if self.page_timeout:
            cf.wait([executor.submit(os.getpid) for _ in range(self.workers)])

    def _run_alone(self, task, split: bool):
        if self.should_stop():
            raise Stopped()
        executor = self.make_executor(1)
        abandon = True
        try:
            self._warm_up(executor)
            future = executor.submit(self.task_fn, task)
            try:
                result = _outcome(future, self.page_timeout)
            except cf.TimeoutError:
                result = Failure.TIMED_OUT
            abandon = result in (Failure.CRASHED, Failure.TIMED_OUT)
        finally:
            if abandon:
                self.kill(executor)
            else:
                executor.shutdown(wait=True)
        pieces = self.split(task) if split else [task]
        if result is Failure.TIMED_OUT:
            self.timeouts += 1
        if result in (Failure.CRASHED, Failure.TIMED_OUT) and len(pieces) > 1:
            for piece in pieces:
                yield from self._run_alone(piece, split=False)
        else:
            yield task, result


def _outcome(future: cf.Future, timeout: float | None = None):
    """A finished future's result; a dead worker is `Failure.CRASHED`, an exception is the result."""
    try:
        return future.result(timeout)
    except cf.BrokenExecutor:
        return Failure.CRASHED
    except (cf.TimeoutError, ExecutorLost):
        raise
    except Exception as exc:  # a bug or an I/O error in the worker, not a crash
        return exc
