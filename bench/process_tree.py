"""Watching a job's whole process tree from a benchmark."""

from __future__ import annotations

import subprocess
import time

import psutil


def watch_tree(proc: subprocess.Popen, cpu_by_pid: dict[int, float] | None = None) -> tuple[int, float]:
    """Peak RSS (VmHWM) of any process in the tree and the CPU seconds of all of them, polled until
    it exits (and each one's CPU seconds by pid into `cpu_by_pid`, where given).

    Polled rather than taken from rusage: pool workers are children of the forkserver, not of the job.
    """
    peaks, cpu = watch_processes(proc, cpu_by_pid)
    return max((peak for _, peak in peaks.values()), default=0), cpu


def watch_processes(proc: subprocess.Popen, cpu: dict[int, float] | None = None,
                    created: dict[int, float] | None = None) -> tuple[dict[int, tuple[str, int]], float]:
    """{pid: (role, peak RSS)} of every process the tree had, and the CPU seconds of all of them (each one's
    by pid into `cpu`, where given, as they are polled; when each was first seen, as time.time() reads it, into
    `created`, where given: within a poll of its start, where psutil's start time can be a second off, its
    boot time being kept to the second).

    The role is 'coordinator' for `proc` itself, else the process's name and first arguments.
    """
    peaks: dict[int, tuple[str, int]] = {}
    cpu = {} if cpu is None else cpu
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in tree:
            try:
                times = p.cpu_times()
                cpu[p.pid] = times.user + times.system
                if created is not None and p.pid not in created:
                    created[p.pid] = time.time()
                with open(f"/proc/{p.pid}/status") as status:
                    for line in status:
                        if line.startswith("VmHWM:"):
                            # Named again until it is a job: a child polled between fork and exec still
                            # has its parent's command line.
                            known = peaks.get(p.pid, ("",))[0]
                            role = known if known.startswith("job: ") else _role(p, root)
                            peaks[p.pid] = (role, max(peaks.get(p.pid, ("", 0))[1], int(line.split()[1]) * 1024))
            except (psutil.Error, OSError):
                pass
        time.sleep(0.02)
    return peaks, sum(cpu.values())


def _role(process: psutil.Process, root: psutil.Process) -> str:
    if process.pid == root.pid:
        return "coordinator"
    arguments = process.cmdline()
    command = " ".join(arguments)
    if arguments[1:3] == ["-m", "curation"] and len(arguments) > 3:  # a job the app launched (runs.jobs.launch)
        return f"job: {arguments[3]}"
    if "resource_tracker" in command:
        return "resource tracker"
    if "forkserver" in command:  # pool workers are forked by the forkserver and keep its command line
        return "worker" if process.ppid() != root.pid else "forkserver"
    return command[:40]


def left_behind(pids: set[int], seconds: float) -> dict[int, tuple[str, int]]:
    """{pid: (role, RSS)} of `pids` (a job's tree, seen before its process ended) still running `seconds` from now;
    a zombie is not. The role: 'resource tracker', 'forkserver', 'worker' (a forkserver's child), else the command."""
    time.sleep(seconds)
    left = {}
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            command = " ".join(process.cmdline())
            role = ("resource tracker" if "resource_tracker" in command else "worker" if process.ppid() in pids
                    else "forkserver" if "forkserver" in command else command[:60])
            left[pid] = (role, process.memory_info().rss)
        except psutil.Error:
            pass
    return left
