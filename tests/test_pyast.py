"""Parsing from several threads (CPython gh-106905).

CPython 3.11 keeps the AST constructor's recursion counter per interpreter and resets it to the
parsing thread's own stack depth. A parse in thread B that runs while thread A is converting
its tree (let in by a finaliser of a garbage collection inside A's conversion) leaves A with
B's count, and A fails with ``SystemError: AST constructor recursion depth mismatch``. This
happened in CI to an LLM procedure fitted with ``concurrency=2``. The handshake below makes the
interleaving certain instead of rare.
"""
import ast
import gc
import sys
import threading
import time

import pytest

from restrictiveness.shared import pyast

# many nodes, so that the conversion allocates enough to run a collection
SOURCE = "x = [" + ",".join(f"(a{i}, b{i})" for i in range(3000)) + "]\n"


def leave_cycle(finaliser_class):
    """Collect, then leave one unreachable cycle holding a ``finaliser_class`` instance: the
    next collection, inside the caller's next parse, runs its ``__del__``."""
    gc.collect()
    cycle = finaliser_class()
    cycle.me = cycle


def interleaved(parse):
    """Thread A parses; a finaliser collected during its conversion waits (at most 1 s) for
    thread B, 40 frames deeper, to parse. Returns the errors each thread raised."""
    inside, b_done = threading.Event(), threading.Event()
    errors = {"A": [], "B": []}

    class Finaliser:
        def __del__(self):
            inside.set()
            b_done.wait(1.0)

    def thread_a():
        leave_cycle(Finaliser)
        try:
            parse(SOURCE)
        except SystemError as exc:
            errors["A"].append(str(exc))

    def deeper(k):
        if k:
            return deeper(k - 1)
        try:
            parse("y = 1")
        except SystemError as exc:
            errors["B"].append(str(exc))

    def thread_b():
        if inside.wait(5.0):
            deeper(40)
        b_done.set()

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10.0)
    assert inside.is_set(), "no collection ran inside the parse: the scenario did not happen"
    return errors


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the race exists in CPython 3.11")
def test_the_race_is_real_with_plain_ast_parse():
    assert "recursion depth mismatch" in " ".join(interleaved(ast.parse)["A"])


def test_package_parse_is_safe_when_threads_interleave():
    assert interleaved(pyast.parse) == {"A": [], "B": []}


def test_a_finaliser_may_parse_on_the_thread_holding_the_lock():
    """A finaliser run inside a parse that parses itself neither deadlocks (the lock is
    re-entrant) nor fails the outer parse (whose counter it reset: the outer parse is retried)."""
    seen, errors = [], []

    class Finaliser:
        def __del__(self):
            seen.append(type(pyast.parse("z + 1", mode="eval").body).__name__)

    def run():
        leave_cycle(Finaliser)
        try:
            seen.append(type(pyast.parse(SOURCE).body[0]).__name__)
        except SystemError as exc:
            errors.append(str(exc))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10.0)
    assert not t.is_alive() and errors == [] and seen == ["BinOp", "Assign"]


def test_the_package_parses_one_thread_at_a_time(monkeypatch):
    """No two of the package's parses overlap, whatever the threads (the lock, apart from the
    retry: each alone would pass the tests above)."""
    inside, most = [0], [0]
    plain = ast.parse

    def slow_parse(*args, **kwargs):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.01)   # lets the other threads in, were the parse not locked
        inside[0] -= 1
        return plain(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(pyast.ast, "parse", slow_parse)
        threads = [threading.Thread(target=pyast.parse, args=("x = 1",)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10.0)
    assert most == [1]


@pytest.mark.parametrize(("module", "name"), [("restrictiveness.shared.pyast", "_PARSE_LOCK"),
                                              ("restrictiveness.shared.expression", "_LOCK"),
                                              ("restrictiveness.shared.blas", "_lock")])
def test_a_child_forked_while_another_thread_holds_the_lock_can_take_it(module, name):
    # a process pool forked by a study's CPU thread while an I/O thread parsed a formula:
    # the worker inherited the parse lock held, waited for it for ever, and the study hung
    import importlib
    import os
    import threading

    mod = importlib.import_module(module)
    held, release = threading.Event(), threading.Event()

    def hold():
        with getattr(mod, name):
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    try:
        pid = os.fork()
        if pid == 0:  # the child: exit 0 if the lock can be taken within 5 s
            os._exit(0 if getattr(mod, name).acquire(timeout=5) else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        holder.join()
    assert os.waitstatus_to_exitcode(status) == 0
