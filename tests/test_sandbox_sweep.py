"""Sandbox directories that a killed process left are reclaimed by the next process's first
sandbox use, and nothing else is: not a live process's (however many processes hold it), not
another user's, not a link's target, not one without a lock file.

Every test works in a private temporary root (``tempfile.tempdir``), never in the real /tmp,
where other test workers run sandboxes at the same time."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import restrictiveness as rx
from restrictiveness.ai.sandbox import SandboxLimits, run_python, workspace

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")

NOBODY = 65534
ROOT = os.geteuid() == 0
_PACKAGE = str(Path(rx.__file__).resolve().parents[1])


@pytest.fixture
def tmp_root(monkeypatch, tmp_path_factory):
    """A private temporary directory where the package makes its directories."""
    tmp_path_factory.getbasetemp()  # before tempfile.tempdir changes: tmp_path stays apart
    root = tempfile.mkdtemp(prefix="rx-sweep-test-")
    monkeypatch.setattr(tempfile, "tempdir", root)
    yield root
    os.chmod(root, 0o700)
    subprocess.run(["chmod", "-R", "u+rwx", root], check=False)
    subprocess.run(["rm", "-rf", root], check=False)


def _owner(root: str, body: str = "") -> tuple[subprocess.Popen, str]:
    """Start a process that makes a sandbox directory in ``root``, runs ``body`` inside it
    (``work`` is its path) and waits; returns the process and the directory."""
    code = textwrap.dedent("""\
        import os, sys, time
        from restrictiveness.ai.sandbox import workspace
        with workspace(prefix="rx-sandbox-") as work:
            os.chdir(work)
        {}
            print(work, flush=True)
            time.sleep(600)
        """).format(textwrap.indent(textwrap.dedent(body), "    "))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": root, "PYTHONPATH": _PACKAGE})
    assert proc.stdout is not None
    path = proc.stdout.readline().strip()
    assert path, "the owner process did not start"
    return proc, path


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _killed_owner(root: str, body: str = "") -> str:
    """A sandbox directory whose owner was killed (SIGKILL: no clean-up ran)."""
    proc, path = _owner(root, body)
    _kill(proc.pid)
    proc.wait()
    assert os.path.isdir(path)  # the leak
    return path


def _next_use() -> None:
    """A later process's first sandbox use (this test process's, in the private root)."""
    with workspace() as work:
        assert work.is_dir()


def test_a_killed_owners_directory_is_reclaimed_by_the_next_use(tmp_root):
    path = _killed_owner(tmp_root, """\
        os.makedirs("a/b/c")
        for name in ("x", "a/y", "a/b/c/z"):
            open(name, "w").write("data")
        os.mkdir("locked")
        open("locked/f", "w").write("data")
        os.chmod("locked", 0)
        os.chmod("a/b", 0)
        """)
    _next_use()
    assert not os.path.lexists(path)
    assert os.listdir(tmp_root) == []  # the lock file too


def test_a_program_made_mode_000_tree_is_reclaimed_by_an_unprivileged_user(tmp_root):
    """Root enters any directory, so the sweep runs under an unprivileged uid here."""
    path = _killed_owner(tmp_root, """\
        os.makedirs("a/b")
        open("a/b/f", "w").write("data")
        os.chmod("a/b", 0)
        os.chmod("a", 0)
        os.chmod(".", 0o500)
        """)
    if ROOT:
        for top, dirs, files in os.walk(tmp_root):
            for name in [top] + [os.path.join(top, n) for n in dirs + files]:
                os.chown(name, NOBODY, NOBODY, follow_symlinks=False)
        os.seteuid(NOBODY)
    try:
        _next_use()
    finally:
        if ROOT:
            os.seteuid(0)
    assert not os.path.lexists(path) and os.listdir(tmp_root) == []


def test_a_live_owners_directory_is_never_reclaimed(tmp_root):
    """A study running now in another process keeps its directory, and so does a forked
    child (fit_timeout's) that outlives the process that made it, until it ends too."""
    from restrictiveness.ai.sandbox.workdir import reclaim_stale

    proc, path = _owner(tmp_root, """\
        open("x", "w").write("data")
        child = os.fork()
        if child == 0:
            time.sleep(600)
            os._exit(0)
        open("child", "w").write(str(child))
        """)
    child = int(Path(path, "child").read_text())
    try:
        _next_use()
        assert open(os.path.join(path, "x")).read() == "data"
        _kill(proc.pid)
        proc.wait()
        assert reclaim_stale(tmp_root) == [] and os.path.isdir(path)
    finally:
        _kill(child)
        _kill(proc.pid)
        proc.wait()
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{child}") and time.monotonic() < deadline:
        time.sleep(0.01)  # the init reaps it
    assert reclaim_stale(tmp_root) == [path] and not os.path.lexists(path)


def test_a_directory_held_in_this_process_is_never_reclaimed(tmp_root):
    from restrictiveness.ai.sandbox.workdir import reclaim_stale

    with workspace(prefix="rx-sandbox-") as work:
        (work / "x").write_text("data")
        assert reclaim_stale(tmp_root) == []
        assert (work / "x").read_text() == "data"


def test_sweeps_racing_live_owners_never_take_their_directories(tmp_root):
    """Sweeps running while directories are made, used and deleted (the lock files come and
    go under them; flock locks of two descriptors exclude each other within a process too)."""
    import threading

    from restrictiveness.ai.sandbox.workdir import OwnedDirectory, reclaim_stale

    taken: list[str] = []
    done = threading.Event()

    def sweep():
        while not done.is_set():
            taken.extend(reclaim_stale(tmp_root))

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    try:
        for i in range(300):
            owned = OwnedDirectory("rx-sandbox-")
            (owned.path / "x").write_text(str(i))
            assert (owned.path / "x").read_text() == str(i)
            assert owned.remove()
    finally:
        done.set()
        sweeper.join()
    assert taken == [] and os.listdir(tmp_root) == []


def _planted_lock(root: str, name: str) -> None:
    Path(root, name + ".lock").write_bytes(b"")


def _stale(root: str) -> str:
    """What a killed owner leaves (as :func:`_killed_owner`, without starting a process): a
    directory beside a lock file that nobody holds."""
    path = os.path.join(root, "rx-sandbox-stale123")
    os.mkdir(path)
    _planted_lock(root, "rx-sandbox-stale123")
    return path


def test_links_are_never_followed(tmp_root, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("data")
    os.symlink(target, os.path.join(tmp_root, "rx-sandbox-linkdir1"))  # a link as the dir
    _planted_lock(tmp_root, "rx-sandbox-linkdir1")
    os.mkdir(os.path.join(tmp_root, "rx-sandbox-linklock"))  # a link as the lock file
    Path(tmp_root, "rx-sandbox-linklock", "keep").write_text("data")
    os.symlink(target / "keep", os.path.join(tmp_root, "rx-sandbox-linklock.lock"))
    stale = _stale(tmp_root)
    os.symlink(target, os.path.join(stale, "dir-link"))
    os.symlink(target / "keep", os.path.join(stale, "file-link"))
    _next_use()
    assert not os.path.lexists(stale)  # its links went, not what they lead to
    assert (target / "keep").read_text() == "data"
    assert os.path.islink(os.path.join(tmp_root, "rx-sandbox-linkdir1"))
    assert Path(tmp_root, "rx-sandbox-linklock", "keep").read_text() == "data"


@pytest.mark.skipif(not ROOT, reason="only root can make another user's directory")
def test_another_users_directory_is_untouched(tmp_root):
    theirs = os.path.join(tmp_root, "rx-sandbox-theirdir")
    os.mkdir(theirs)
    Path(theirs, "keep").write_text("data")
    os.chown(theirs, NOBODY, NOBODY)
    _planted_lock(tmp_root, "rx-sandbox-theirdir")  # even beside a lock file of ours
    ours = os.path.join(tmp_root, "rx-sandbox-theirlck")  # our directory, their lock file
    os.mkdir(ours)
    Path(ours, "keep").write_text("data")
    _planted_lock(tmp_root, "rx-sandbox-theirlck")
    os.chown(ours + ".lock", NOBODY, NOBODY)
    stale = _stale(tmp_root)
    _next_use()
    assert not os.path.lexists(stale)
    assert Path(theirs, "keep").read_text() == Path(ours, "keep").read_text() == "data"


def test_a_directory_without_a_lock_file_is_left(tmp_root):
    """Made by a version before the lock files: nothing tells whether its owner runs."""
    old = os.path.join(tmp_root, "rx-sandbox-oldstyle")
    os.mkdir(old)
    Path(old, "keep").write_text("data")
    stale = _stale(tmp_root)
    _next_use()
    assert not os.path.lexists(stale) and Path(old, "keep").read_text() == "data"


def _processes_in(root: str) -> list[int]:
    """Processes started for a run in ``root`` (their command line names its configuration)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                    if root.encode() in fh.read():
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("backend, isolation", [("bwrap", "full"), ("builtin", "full"),
                                                ("builtin", "guard-only")])
def test_a_killed_run_python_leaves_nothing_for_the_next_run(tmp_root, backend, isolation):
    """The real thing: the parent of a running sandboxed program is killed. Its program ends
    with it (it slept on in the directory under the built-in backend and guard-only), and
    the next run deletes the directory."""
    if backend == "bwrap" and not shutil.which("bwrap"):
        pytest.skip("bubblewrap is not installed")
    code = ("import warnings\nwarnings.simplefilter('ignore')\n"
            "from restrictiveness.ai.sandbox import run_python, SandboxLimits\n"
            "r = run_python('import time\\nopen(\"started\", \"w\").close()\\ntime.sleep(600)',"
            f" limits=SandboxLimits(wall_seconds=600, isolation={isolation!r}))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": tmp_root, "PYTHONPATH": _PACKAGE,
                                 "RX_SANDBOX_BACKEND": backend})
    deadline = time.monotonic() + 60
    started: list[Path] = []
    while not started and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        # under full isolation the program writes into a tmpfs of its own mounted over the
        # directory: seen through the current directory of its process
        started = list(Path(tmp_root).glob("rx-sandbox-*/started")) + [
            Path(f"/proc/{pid}/cwd/started") for pid in _processes_in(tmp_root)
            if os.path.exists(f"/proc/{pid}/cwd/started")]
    _kill(proc.pid)
    _, err = proc.communicate()
    if not started and "SandboxUnavailableError" in err.decode():
        pytest.skip("the sandbox is unavailable here")
    assert started, err.decode()[-2000:]
    deadline = time.monotonic() + 10
    while (left := _processes_in(tmp_root)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:  # the old code's orphans: end them before failing
        _kill(pid)
    assert left == []
    r = run_python("print(1)", limits=SandboxLimits(wall_seconds=30))
    assert r.ok and r.stdout == "1\n"
    assert os.listdir(tmp_root) == []


# -- the removal holds against a program still running in the tree --------------------------

def test_permissions_are_restored_never_through_a_link(tmp_path):
    from restrictiveness.ai.sandbox import workdir

    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    (tmp_path / "link").symlink_to(target)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError):
            workdir._enter("link", fd)
    finally:
        os.close(fd)
    assert target.stat().st_mode & 0o777 == 0o755


def test_removal_never_climbs_out_of_a_tree_moved_under_it(tmp_path, monkeypatch):
    """A program moves the directory being emptied up a level: ``..`` then leads outside
    the tree, where names like the tree's must not be deleted."""
    from restrictiveness.ai.sandbox import workdir

    top = tmp_path / "top"
    (top / "a" / "b" / "c").mkdir(parents=True)
    (top / "x").mkdir()
    (tmp_path / "a").mkdir()          # outside, named like entries of the tree
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep").write_text("data")
    deepest = (top / "a" / "b" / "c").stat().st_ino
    real_scan = workdir._scan

    def scan_and_move(fd):
        if os.fstat(fd).st_ino == deepest:  # the program's move, while "c" is emptied
            os.rename(top / "a" / "b", top / "b")
        return sorted(real_scan(fd), reverse=True)  # "a" before "x"

    monkeypatch.setattr(workdir, "_scan", scan_and_move)
    workdir.remove_tree(top)
    assert (tmp_path / "a").is_dir() and (tmp_path / "x" / "keep").read_text() == "data"


def test_removal_enters_no_mount_in_the_tree(tmp_path):
    """A bind mount in a stale tree (one made to inspect a killed run) had its source, outside
    the tree, emptied by the sweep; the mount is left and the removal fails. Done in a child
    with a mount namespace of its own, so no mount outlives the test."""
    from restrictiveness.ai.sandbox import workdir
    from restrictiveness.ai.sandbox._child import syscalls

    if not ROOT:
        pytest.skip("making a mount needs root")
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    (victim / "precious").write_text("data")
    inside = tmp_path / "tree" / "sub" / "m"
    inside.mkdir(parents=True)
    pid = os.fork()
    if pid == 0:  # the child: never leaves this branch
        status = 3
        try:
            syscalls.unshare(syscalls.CLONE_NEWNS)
            syscalls.mount(None, "/", None, syscalls.MS_REC | syscalls.MS_PRIVATE)
            syscalls.mount(str(victim), str(inside), None, syscalls.MS_BIND)
            status = 1 if workdir.remove_tree(tmp_path / "tree") else 0
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # the removal failed, as it must
    assert (victim / "precious").read_text() == "data"
    assert victim.stat().st_mode & 0o777 == 0o755


# -- what a run cut short leaves ---------------------------------------------------------------

def test_a_fit_child_killed_at_its_limit_leaves_what_the_next_child_reclaims(tmp_root):
    """fit_timeout forks a child per batch of fits; one killed mid-clean-up leaves its
    directory. The children inherited the set of temporary directories already swept, so no
    later child swept again and the directory stayed for the rest of the study."""
    from restrictiveness.ai.sandbox.workdir import OwnedDirectory

    _next_use()  # the study's process has swept

    def in_child(work) -> int:
        pid = os.fork()
        if pid == 0:
            status = 3
            try:
                status = work()
            finally:
                os._exit(status)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    left: list[str] = []
    r, w = os.pipe()

    def killed() -> int:  # exits without its clean-up, as SIGKILL would
        os.write(w, str(OwnedDirectory("rx-sandbox-").path).encode())
        return 0

    assert in_child(killed) == 0
    os.close(w)
    left.append(os.read(r, 4096).decode())
    os.close(r)
    assert os.path.isdir(left[0])
    assert in_child(lambda: OwnedDirectory("rx-sandbox-").remove() and 0) == 0
    assert not os.path.lexists(left[0])
    assert os.listdir(tmp_root) == []


def test_a_sweep_that_cannot_delete_never_fails_the_run(tmp_root, monkeypatch):
    """A stale tree that would not go made the sweep warn, and with warnings as errors the
    warning escaped the sweep (documented never to raise) and failed every sandbox use."""
    import warnings

    from restrictiveness.ai.sandbox import workdir

    path = _stale(tmp_root)
    real = workdir.remove_tree
    monkeypatch.setattr(workdir, "remove_tree",
                        lambda p: False if os.fspath(p) == path else real(p))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _next_use()
    assert os.path.isdir(path) and os.path.isfile(path + ".lock")  # kept for a later retry
    with pytest.warns(RuntimeWarning, match=r"could not delete .*stale123, left by processes "
                                            r"that have ended; the next process's sweep"):
        assert workdir.reclaim_stale(tmp_root) == []


def test_an_interrupt_after_the_directory_is_made_leaves_it_reclaimable(tmp_root, monkeypatch):
    """Ctrl-C between the directory's mkdir and the end of the constructor unlinked the lock
    file and left the directory, which no sweep takes without one."""
    from restrictiveness.ai.sandbox import workdir

    _next_use()
    real_mkdir = os.mkdir
    made: list[str] = []

    def mkdir_then_interrupt(path, *args, **kwargs):
        real_mkdir(path, *args, **kwargs)
        made.append(os.fspath(path))
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "mkdir", mkdir_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        workdir.OwnedDirectory("rx-sandbox-")
    monkeypatch.setattr(os, "mkdir", real_mkdir)
    assert len(made) == 1 and os.path.isdir(made[0])
    assert workdir.reclaim_stale(tmp_root) == [made[0]]
    assert os.listdir(tmp_root) == []


def test_a_prefix_no_sweep_knows_is_refused(tmp_root):
    """``workspace(prefix="mine-")`` made a directory that no sweep would ever reclaim after a
    kill, without a word."""
    from restrictiveness.ai.sandbox.workdir import OwnedDirectory

    with pytest.raises(rx.ConfigurationError, match=r"prefix 'mine-'.*'rx-sandbox-' or "
                                                    r"'rx-agent-'"):
        with workspace(prefix="mine-"):
            pass
    with pytest.raises(rx.ConfigurationError):
        OwnedDirectory("rx-sandbox")  # the dash is part of the name the sweep matches
    assert os.listdir(tmp_root) == []


def test_a_file_system_without_locks_still_gets_a_directory(tmp_root, monkeypatch):
    """flock refused (some FUSE and 9p mounts): every sandbox use failed, where a temporary
    directory used to be made. Now a directory as before, with a warning that it will not be
    reclaimed after a kill, and no lock file left."""
    import errno
    import fcntl

    from restrictiveness.ai.sandbox import workdir

    _next_use()

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.warns(RuntimeWarning, match="does not support file locks"):
        owned = workdir.OwnedDirectory("rx-agent-")
    assert owned.path.is_dir() and owned.path.name.startswith("rx-agent-")
    assert os.listdir(tmp_root) == [owned.path.name]  # no lock file
    assert owned.remove() and os.listdir(tmp_root) == []
