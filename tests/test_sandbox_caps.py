"""The disk and file-count caps are the kernel's: the program's working directory is a tmpfs
mounted with ``size=`` and ``nr_inodes=`` (``restrictiveness/ai/sandbox/_child/workspace.py``).

The parent used to poll the working directory four times a second, and a program wrote past
the caps between two polls: one 200 MiB ``write`` left 74 to 194 MiB under a 50 MiB cap, four
20 MB files deleted while held open 52 to 78 MiB, and 20,000 hard links were made under a
3,000-file cap. Each attack below runs without the in-process guard (a red team that knows the
source switches it off) under both namespace backends, and reports what the kernel let it
keep; the kernel refuses the first byte or entry past the cap, so the program is still running
to say so, and the run is classified "output-limit".
"""

from __future__ import annotations

import os
import shutil
import stat
import sys

import pytest

import restrictiveness as rx
from restrictiveness.ai.sandbox import runner as sandbox_runner

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")

MiB = 2**20
CAP, FILES = 50 * MiB, 3000
LIMITS = rx.SandboxLimits(wall_seconds=30, cpu_seconds=15, memory_bytes=2 * 2**30,
                          output_bytes=200_000, disk_bytes=CAP, max_files=FILES)


@pytest.fixture(params=["builtin", "bwrap"])
def unguarded(request, monkeypatch):
    if request.param == "bwrap" and not shutil.which("bwrap"):
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    monkeypatch.setenv("RX_SANDBOX_BACKEND", request.param)
    monkeypatch.setattr(sandbox_runner, "_GUARD", False)
    return request.param


def _kept(stdout: str, word: str) -> int | None:
    """The number the program printed after ``word`` (None: it was killed before)."""
    found = [line.split()[1] for line in stdout.splitlines() if line.startswith(word + " ")]
    return int(found[-1]) if found else None


# what the program holds on its working directory: data blocks of every file it can reach
HELD = """
def held(fds=()):
    seen = {}
    for fd in fds:
        st = os.fstat(fd)
        seen[st.st_ino] = st.st_blocks * 512
    for dirpath, dirs, files in os.walk('.'):
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            seen[st.st_ino] = st.st_blocks * 512
    return sum(seen.values())
"""

WRITERS = {
    # one call: the parent's polls never saw it coming
    "one-write": """
fd = os.open('big', os.O_CREAT | os.O_WRONLY)
try:
    os.write(fd, b'x' * (200 * 2**20))
    os.write(fd, b'x' * 2**20)
except OSError as exc:
    print('refused', exc.errno)
print('held', held([fd]), flush=True)
""",
    # deleted while open: no directory names them
    "deleted-held-open": """
fds = []
try:
    for i in range(4):
        fd = os.open(f'h{i}', os.O_CREAT | os.O_RDWR)
        fds.append(fd)
        os.unlink(f'h{i}')
        os.write(fd, b'x' * 20_000_000)
        os.write(fd, b'x' * 20_000_000)
except OSError as exc:
    print('refused', exc.errno)
print('held', held(fds), flush=True)
""",
    # sparse files are free, their filled ranges are not
    "sparse-tails": """
fds = []
try:
    for i in range(2000):
        fd = os.open(f's{i}', os.O_CREAT | os.O_WRONLY)
        fds.append(fd)
        os.pwrite(fd, b'z' * 65536, 200 * 2**20)
except OSError as exc:
    print('refused', exc.errno)
print('held', held(fds), flush=True)
""",
}


STOPPED = f"the program wrote more than {CAP} bytes of files and was stopped"
NO_ROOM = (f"the program filled its working directory (at most {CAP} bytes and {FILES} files "
           "and directories) and was stopped")


@pytest.mark.parametrize("then", ["exits", "sleeps"])
@pytest.mark.parametrize("attack", sorted(WRITERS))
def test_writes_stop_at_the_disk_cap(attack, then, unguarded, tmp_path):
    """Refused at the cap, the program reports what it holds. If it then keeps the directory
    full, the parent stops it; if it exits, the tmpfs full at its end (or its status without
    room, when what filled it was deleted files it held) reads as the cap too."""
    source = "import os, time\n" + HELD + WRITERS[attack] + \
        ("time.sleep(30)\n" if then == "sleeps" else "")
    r = rx.run_python(source, limits=LIMITS, workdir=tmp_path / "work")
    held = _kept(r.stdout, "held")
    assert held is not None, f"killed before the kernel refused anything: {r.message}"
    assert held <= CAP, f"{held - CAP} bytes past the cap"
    assert _kept(r.stdout, "refused") == 28  # ENOSPC
    assert r.reason == "output-limit"
    if then == "sleeps":
        assert r.message == STOPPED and r.seconds < 15
    else:
        assert r.message == (NO_ROOM if attack == "deleted-held-open" else STOPPED)


ENTRIES = {
    "files": "os.close(os.open(f'f{i}', os.O_CREAT | os.O_WRONLY))",
    "directories": "os.mkdir(f'd{i}')",
    "hard-links": "os.link('base', f'l{i}')",
    "symbolic-links": "os.symlink('base', f'y{i}')",
}


@pytest.mark.parametrize("kind", sorted(ENTRIES))
def test_entries_stop_at_the_file_count_cap(kind, unguarded, tmp_path):
    source = f"""
import os
os.close(os.open('base', os.O_CREAT | os.O_WRONLY))
made = 0
try:
    for i in range(3 * {FILES}):
        {ENTRIES[kind]}
        made += 1
except OSError as exc:
    print('refused', exc.errno)
entries = sum(len(d) + len(f) for _, d, f in os.walk('.'))
print('entries', entries, flush=True)
"""
    r = rx.run_python(source, limits=LIMITS, workdir=tmp_path / "work")
    entries = _kept(r.stdout, "entries")
    assert entries is not None, f"killed before the kernel refused anything: {r.message}"
    assert entries <= FILES
    assert _kept(r.stdout, "refused") == 28  # ENOSPC
    assert r.reason == "output-limit" and f"{FILES} files" in r.message, r.message


def test_a_kept_directory_keeps_its_files_and_nothing_else(unguarded, tmp_path):
    """An agent's files go back to its directory after each run: contents, sparse files as
    sparse, links as links (never followed); a FIFO is left behind, and a file the
    program locked (mode 000) comes back readable."""
    work = tmp_path / "work"
    source = """
import os
os.makedirs('sub/deeper')
open('sub/deeper/a.txt', 'w').write('kept')
fd = os.open('sparse.bin', os.O_CREAT | os.O_WRONLY)
os.pwrite(fd, b'end', 100 * 2**20)
os.symlink('/etc/shadow', 'link')
os.mkfifo('fifo')
open('locked', 'w').write('x')
os.chmod('locked', 0)
"""
    r = rx.run_python(source, limits=LIMITS, workdir=work)
    assert r.ok, r.message
    assert (work / "sub/deeper/a.txt").read_text() == "kept"
    sparse = (work / "sparse.bin").stat()
    assert sparse.st_size == 100 * MiB + 3 and sparse.st_blocks * 512 <= MiB
    assert (work / "sparse.bin").read_bytes()[-3:] == b"end"
    assert os.readlink(work / "link") == "/etc/shadow"
    assert not os.path.lexists(work / "fifo")
    assert (work / "locked").read_text() == "x"
    assert stat.S_IMODE((work / "locked").stat().st_mode) == 0o600
    again = rx.run_python("print(open('sub/deeper/a.txt').read())", limits=LIMITS, workdir=work)
    assert again.stdout.strip() == "kept"


def test_files_that_do_not_fit_the_caps_are_refused_before_the_program_runs(tmp_path):
    """A working directory holding more than the caps (an agent's, or files given to the run)
    cannot be copied into its tmpfs: the program never starts."""
    r = rx.run_python("print('started')", limits=LIMITS,
                      files={"data.bin": b"x" * (CAP + MiB)})
    assert r.reason == "output-limit" and "started" not in r.stdout
    assert r.message == (f"the working directory's files take more than the program's "
                         f"{CAP} bytes or {FILES} files and directories; it did not run")
