"""Forking beside threads: a child never waits for a lock that a thread it lacks was holding."""

from __future__ import annotations

import os
import pathlib
import re
import threading
import time

import numba
import pytest
from numba.core.compiler_lock import global_compiler_lock

import restrictiveness
from restrictiveness.shared.forksafe import ForkSafeLock


def _exit_code(pid: int, within: float) -> int | None:
    """The child's exit code, or None (after killing it) if it has not exited ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def _free_to_another_thread(lock: ForkSafeLock) -> bool:
    got = []

    def try_it():
        got.append(lock.acquire(blocking=False))
        if got[0]:
            lock.release()

    thread = threading.Thread(target=try_it)
    thread.start()
    thread.join()
    return got[0]


def test_a_fork_during_another_threads_compilation_waits_for_it_and_the_child_compiles():
    # An I/O thread of a study compiling a kernel (holding numba's compiler lock for seconds)
    # while the CPU thread forks a process-pool worker: the worker inherited the lock held
    # and hung at its first compilation.
    held, compiled = threading.Event(), threading.Event()

    def compile_for_a_while():
        with global_compiler_lock:
            held.set()
            time.sleep(0.5)
            compiled.set()  # the last thing done holding the lock

    thread = threading.Thread(target=compile_for_a_while)
    thread.start()
    held.wait(5)
    pid = os.fork()
    if pid == 0:  # the child: compile a kernel it has never seen
        try:
            os._exit(0 if numba.njit(lambda x: x + 1)(41) == 42 else 1)
        finally:
            os._exit(2)
    waited = compiled.is_set()
    thread.join()
    assert _exit_code(pid, within=20) == 0
    # the fork waited for the compilation to end: it comes back after it, not merely late (a
    # wait of over 0.2 s of 0.5 s was asked, and a test thread delayed between the lock's
    # taking and its own clock's start under load measured less)
    assert waited


@pytest.mark.parametrize("reentrant", [False, True])
def test_a_lock_held_by_the_forking_thread_stays_its_own_in_the_child(reentrant):
    # the child's only thread holds it: it must be able to release it as often as it took it
    lock = ForkSafeLock(reentrant=reentrant)
    depth = 2 if reentrant else 1
    for _ in range(depth):
        lock.acquire()
    pid = os.fork()
    if pid == 0:
        try:
            for _ in range(depth):
                lock.release()
            free = lock.acquire(blocking=False)
            os._exit(0 if free else 1)
        finally:
            os._exit(2)
    try:
        assert _exit_code(pid, within=10) == 0
        assert not _free_to_another_thread(lock)  # in the parent this thread still holds it
    finally:
        for _ in range(depth):
            lock.release()
    assert _free_to_another_thread(lock)


def test_releasing_a_free_lock_is_an_error_that_leaves_it_usable():
    lock = ForkSafeLock()
    with pytest.raises(RuntimeError, match="release unlocked lock"):
        lock.release()
    with lock:
        assert not _free_to_another_thread(lock)
    assert _free_to_another_thread(lock)


def test_a_lock_held_by_another_thread_is_free_in_the_child():
    lock = ForkSafeLock(reentrant=True)
    held, release = threading.Event(), threading.Event()

    def hold():
        with lock, lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if lock.acquire(timeout=5) else 1)
        assert _exit_code(pid, within=10) == 0
        assert not _free_to_another_thread(lock)  # the parent's holder still has it
    finally:
        release.set()
        holder.join()
    assert _free_to_another_thread(lock)


def test_the_package_takes_no_plain_lock_a_forked_child_could_inherit_held():
    # every lock of the package is a ForkSafeLock, except KeyedOnce's: its values are computed
    # in the caller's threads, which forked children never call back into
    package = pathlib.Path(restrictiveness.__file__).parent
    plain = re.compile(r"threading\.R?Lock\(\)")
    found = {str(path.relative_to(package)): len(plain.findall(path.read_text()))
             for path in package.rglob("*.py")}
    found = {path: count for path, count in found.items() if count}
    assert found == {"engine/concurrency.py": 2}
