"""Checkpoints of a study: finished replications on disk, so a killed run resumes.

A checkpoint is a directory holding

* ``study.json`` — the study's configuration, its SHA-256 (the *configuration hash*) and the
  package versions that wrote it;
* ``replication-000042.npz`` — one record per finished replication (arrays in ``.npz``,
  metadata in JSON, a SHA-256 of the content and the configuration hash; see
  :mod:`restrictiveness.engine.records`), each written atomically;
* ``.lock`` and ``.claims/`` — ``fcntl`` locks (empty files);
* for a moment, ``.replication-000042.npz.{pid}.{random}.tmp`` — a record being written.

Safety rules:

* Records are never unpickled. A record that is unreadable, fails its checksum, carries
  another configuration hash, holds the procedures in another order or (unless resuming
  under other versions is asked for) was written under other package versions or other code
  (a record copied from another checkpoint directory) is named in a
  :class:`~restrictiveness.CheckpointWarning`, moved to ``rejected/`` (under a name of its
  own: the time to the second and a unique suffix) and recomputed.
  Records without ``study.json`` are refused (nothing says which study wrote them), and so
  are checkpoints of the old pickle format.
* Opening is atomic under the directory's lock: of any number of processes opening one new
  directory with different configurations, exactly one is accepted. The refusal names the
  configuration fields that differ.
* The number of replications M is not part of the configuration hash: replication ``m``
  depends only on the study and ``m`` (:func:`~restrictiveness.engine.study.run_replication`),
  so extending M reuses the finished replications.
* Resuming under other package versions (numpy, scipy, numba, ...) is refused unless asked
  for: the finished replications might not be reproduced bit for bit.
* So is resuming under other code (:func:`code_fingerprint`): ``study.json`` records a
  SHA-256 of this package's files and of the module file of every class, defined outside it,
  of the objects a run names (its procedures, ...), because reprs do not show code: a fix
  to a procedure's ``fit`` under an unchanged repr and version used to mix the old code's
  replications with the new code's.
* Concurrent runs of one configuration share the remaining replications: a run *claims* a
  replication (a lock on ``.claims/replication-000042``) before computing it, and skips those
  claimed by others; it then waits for them and loads their records, or computes them itself
  if their claimant stopped without finishing.
* A writer killed mid-write (SIGKILL) leaves its temporary file behind. Opening a checkpoint
  removes such files, and only them: names of the package's own temporary pattern, regular
  files (a symbolic link is neither followed nor removed), whose writer (the process id in the
  name) is dead and, for a record, whose replication nobody claims.

Records are assembled in replication order, so resumed results are identical to an
uninterrupted run.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import inspect
import json
import os
import re
import stat
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable
from pathlib import Path

from ..shared._versions import package_versions
from ..shared.exceptions import CheckpointError, CheckpointWarning
from ..shared.files import FileLock, LockBusy, alive, atomic_write_bytes
from .records import RecordError, ReplicationRecord, decode_record, encode_record

__all__ = ["Checkpoint", "code_fingerprint", "configuration_hash"]

FORMAT = "restrictiveness-checkpoint"
FORMAT_VERSION = 2
#: Configuration fields that do not change any replication's numbers.
_NOT_HASHED = ("replications",)
#: Temporary files of :func:`~restrictiveness.shared.files.atomic_output` in a checkpoint:
#: the target's name, the writer's process id, mkstemp's random part.
_TEMPORARY = re.compile(r"\.(?:replication-(\d{6})\.npz|study\.json)\.([1-9]\d*)\.[a-z0-9_]+\.tmp")


def _identity(configuration: dict) -> dict:
    """The configuration as hashed: without M, and without memory addresses in reprs (they
    say nothing about what is computed, e.g. a user's client object)."""
    text = json.dumps({k: v for k, v in configuration.items() if k not in _NOT_HASHED},
                      sort_keys=True)
    return json.loads(re.sub(r" at 0x[0-9a-fA-F]+", "", text))


def configuration_hash(configuration: dict) -> str:
    """SHA-256 of a study configuration, ignoring M and memory addresses.

    Examples
    --------
    >>> configuration_hash({"seed": 1, "replications": 10}) == configuration_hash(
    ...     {"seed": 1, "replications": 50})
    True
    """
    text = json.dumps(_identity(configuration), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: Files of the package that compute or feed numbers: sources and shipped data (an editor's
#: swap file or a notebook's checkpoint folder beside them changes nothing).
_PACKAGE_SUFFIXES = (".py", ".csv", ".json")
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def _package_digest(root: Path = _PACKAGE_ROOT) -> str:
    """SHA-256 of the package's sources and shipped data under ``root``, by relative path."""
    h = hashlib.sha256()
    for file in sorted(root.rglob("*")):
        rel = file.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts) \
                or file.suffix not in _PACKAGE_SUFFIXES or not file.is_file():
            continue
        h.update(f"{rel.as_posix()}|{_file_digest(file)}|".encode())
    return h.hexdigest()


#: How far :func:`_code_carriers` follows attributes, and how many objects it visits at most.
_CARRIER_DEPTH, _CARRIER_LIMIT = 6, 20_000
_PLAIN = (str, bytes, bytearray, int, float, complex, bool, type(None), range, memoryview)


def _held(obj: object, top: bool) -> list:
    """What ``obj`` holds that may carry code: items, a partial's function and arguments, a
    bound method's function and instance, a closure's cells, and attributes. Below the object
    handed in (``top``), private attributes (``_client``) and fitted state (``coef_``) are not
    followed, nor at any level a ``functools.cached_property``'s value: they hold what an
    object built as it was used, not what it was given, and would make a resume in the same
    session differ from the run it resumes."""
    if isinstance(obj, _PLAIN) or type(obj).__module__.partition(".")[0] == "numpy" \
            or inspect.ismodule(obj) or inspect.isclass(obj):
        # numbers, text and arrays hold no code; a module or class would be its namespace
        return []
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if inspect.ismethod(obj):
        return [obj.__func__, obj.__self__]
    if inspect.isfunction(obj):
        cells = []
        for cell in obj.__closure__ or ():
            with contextlib.suppress(ValueError):  # a cell not yet filled
                cells.append(cell.cell_contents)
        return cells
    if isinstance(obj, list | tuple | set | frozenset):
        return list(obj)
    if isinstance(obj, dict):
        return list(obj.values())
    try:  # a proxy's __getattr__ may answer anything, or raise anything
        attributes = object.__getattribute__(obj, "__dict__")
    except Exception:  # noqa: BLE001 - no attributes to follow
        return []
    # a cached property's value is made on first use (an SDK client's ``chat`` resource)
    cached = {name for klass in type(obj).__mro__ for name, value in vars(klass).items()
              if isinstance(value, functools.cached_property)}
    return [value for name, value in attributes.items() if isinstance(name, str)
            and name not in cached
            and (top or not (name.startswith("_") or name.endswith("_")))]


def _code_carriers(obj: object) -> list:
    """``obj`` and what it holds, followed down: a model function handed to ``NLS`` (or a
    ``functools.partial`` of one), an estimator wrapped by ``SklearnRegressor`` and the steps
    of its pipeline, a user's constraint inside an eligible set."""
    found: list = []
    seen, level = set(), [obj]
    for depth in range(_CARRIER_DEPTH + 1):
        below = []
        for item in level:
            # numbers and text hold no code and would use up the limit (a grid of 30,000)
            if id(item) in seen or isinstance(item, _PLAIN) or len(found) >= _CARRIER_LIMIT:
                continue
            seen.add(id(item))
            found.append(item)
            if depth < _CARRIER_DEPTH:
                below.extend(_held(item, top=depth == 0))
        level = below
    return found


def _source_digest(thing) -> str:
    try:
        return hashlib.sha256(inspect.getsource(thing).encode()).hexdigest()
    except (OSError, TypeError):  # typed at a prompt whose history is gone
        return "no source"


def code_fingerprint(objects: Iterable[object] = ()) -> dict[str, str]:
    """SHA-256 of the code that computes a study's numbers, by module.

    Parameters
    ----------
    objects : iterable
        Objects whose code matters (a study's evaluation distribution, procedures, baseline,
        discrepancies). For each one, and what it holds down to six levels (a model function
        or a ``functools.partial`` of one, a wrapped estimator and the steps of its
        pipeline; below the first level, not private attributes or fitted state such as
        ``coef_``), the module file of every class in its MRO (of a function: its module's
        file) that is defined outside this package, the standard library and the numerical
        stack whose versions every checkpoint records is hashed. Classes and functions of a
        script run as ``__main__``, or of a module without a file, are hashed by their own
        source, so that editing the rest of the script (extending M, say) does not count as
        a change.

    Returns
    -------
    dict
        ``{"restrictiveness": digest of this package's files, module: digest, ...}``, with
        keys ``"__main__.<qualname>"`` for code hashed by its source.

    Examples
    --------
    >>> fingerprint = code_fingerprint([3.0])  # a float's class is built in: the package only
    >>> list(fingerprint), len(fingerprint["restrictiveness"])
    (['restrictiveness'], 64)
    """
    out = {"restrictiveness": _package_digest()}
    # the numerical stack's versions are compared on their own (an array held deep down would
    # otherwise add numpy's file)
    skipped = {"builtins", *package_versions()}
    for obj in objects:
        for carrier in _code_carriers(obj):
            code = [carrier] if inspect.isfunction(carrier) else list(
                (carrier if inspect.isclass(carrier) else type(carrier)).__mro__)
            for thing in code:
                name = thing.__module__ or ""
                top = name.partition(".")[0]
                if top in skipped or top in sys.stdlib_module_names:
                    continue
                file = getattr(sys.modules.get(name), "__file__", None)
                if name == "__main__" or not (file and Path(file).is_file()):
                    out[f"{name}.{thing.__qualname__}"] = _source_digest(thing)
                elif name not in out:
                    out[name] = _file_digest(Path(file))
    return out


def _read_regular(path: Path) -> bytes:
    """The bytes of ``path``; ValueError if it is not a regular file (a symbolic link is not
    followed): a pipe named as a record blocked the run for ever, and a link to /dev/zero
    filled the memory. The package writes only regular files there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError("is a symbolic link, not a regular file") from None
        raise
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    if not regular:  # (before fdopen, which refuses a directory naming the descriptor)
        os.close(fd)
        raise ValueError("is not a regular file")
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _short(value, width: int = 70) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def differences(stored: dict, current: dict) -> list[str]:
    """Human-readable differences between two configurations, field by field.

    Examples
    --------
    >>> differences({"seed": 0, "n": [50]}, {"seed": 1, "n": [50]})
    ['seed: 0 in the checkpoint, 1 now']
    """
    a, b = _identity(stored), _identity(current)
    out = []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            out.append(f"{key}: {'absent' if key not in a else _short(a[key])} in the "
                       f"checkpoint, {'absent' if key not in b else _short(b[key])} now")
        elif a[key] != b[key] and isinstance(a[key], dict) and isinstance(b[key], dict):
            for sub in sorted(set(a[key]) | set(b[key])):
                if sub not in b[key]:
                    out.append(f"{key}[{sub!r}]: in the checkpoint only")
                elif sub not in a[key]:
                    out.append(f"{key}[{sub!r}]: new")
                elif a[key][sub] != b[key][sub]:
                    out.append(f"{key}[{sub!r}]: {_short(a[key][sub])} in the checkpoint, "
                               f"{_short(b[key][sub])} now")
        elif a[key] != b[key]:
            out.append(f"{key}: {_short(a[key])} in the checkpoint, {_short(b[key])} now")
    return out


class Checkpoint:
    """Finished replications of one study configuration in a directory.

    Parameters
    ----------
    path : str or Path
        Directory (created if needed).
    configuration : dict
        The study's :meth:`~restrictiveness.engine.study.Study.configuration`.
    allow_other_versions : bool
        Resume a checkpoint written under other package versions or other code (default:
        refuse).
    code : iterable, optional
        The objects whose classes' code the run depends on (see :func:`code_fingerprint`);
        this package's own files are always fingerprinted.

    Raises
    ------
    CheckpointError
        The path is a file or not writable; the directory was written by another
        configuration, other package versions, other code or an old version of this
        package; or it holds records but no ``study.json``.

    Examples
    --------
    >>> import tempfile
    >>> ck = Checkpoint(tempfile.mkdtemp(), {"seed": 1})
    >>> ck.done()
    {}
    """

    def __init__(self, path, configuration: dict, allow_other_versions: bool = False,
                 code: Iterable[object] = ()) -> None:
        if not isinstance(path, str | os.PathLike) or not str(path):
            # 3 was a TypeError from pathlib; '' was the working directory (Path('') is '.')
            raise CheckpointError(f"checkpoint must be a directory path, got {path!r}")
        self.path = Path(path)
        self.configuration = configuration
        self.hash = configuration_hash(configuration)
        # The hash reads the procedures as a mapping, in any order; records hold them by
        # position, so the order is kept beside it (a reordered dict swapped their labels)
        procedures = configuration.get("procedures")
        self.order = list(procedures) if isinstance(procedures, dict) else None
        self.versions = package_versions()
        self.code = code_fingerprint(code)
        # What every record carries besides the configuration hash, and must match when read:
        # a record copied from another directory of the same configuration was used although
        # it held the procedures in another order (their rows swapped) or came from other
        # versions or code, which that directory's study.json would have refused
        self.identity = {"procedure_order": self.order, "versions": self.versions,
                         "code_sha256": hashlib.sha256(
                             json.dumps(self.code, sort_keys=True).encode()).hexdigest()}
        # (resumed under other versions or code, as asked, records written before they
        # carried their order are taken at the study.json's order, checked on opening)
        self._required = {k: v for k, v in self.identity.items()
                          if k == "procedure_order" or not allow_other_versions}
        self._legacy = ("procedure_order",) if allow_other_versions else ()
        self._claims: dict[int, FileLock] = {}
        if self.path.exists() and not self.path.is_dir():
            raise CheckpointError(f"checkpoint {self.path} is a file, not a directory; pass a "
                                  "directory path (it is created if needed)")
        try:
            (self.path / ".claims").mkdir(parents=True, exist_ok=True)
            with FileLock(self.path / ".lock"):
                self._open(allow_other_versions)
                self._remove_stale_temporaries()
        except OSError as exc:
            raise CheckpointError(f"checkpoint {self.path} cannot be used: "
                                  f"{exc.strerror or exc}") from None

    # -- opening --------------------------------------------------------------------------
    def _open(self, allow_other_versions: bool) -> None:
        meta = self.path / "study.json"
        old = sorted(p.name for p in self.path.glob("replication-*.pkl"))
        if old:
            raise CheckpointError(
                f"checkpoint {self.path} was written by an older version of restrictiveness "
                f"(pickled records such as {old[0]}); they are not loaded, because unpickling "
                "a file can run arbitrary code. Use a fresh checkpoint directory (or delete "
                "this one) and rerun; the run recomputes the replications")
        if not meta.exists():
            records = self._record_files()
            if records:
                raise CheckpointError(
                    f"checkpoint {self.path} holds {len(records)} replication record(s) but no "
                    "study.json, so nothing says which study wrote them; they are not used. "
                    "Use a fresh checkpoint directory, or move the records away")
            atomic_write_bytes(meta, json.dumps({
                "format": FORMAT, "format_version": FORMAT_VERSION,
                "configuration_sha256": self.hash, "versions": self.versions,
                "code": self.code, "configuration": self.configuration,
                "procedure_order": self.order},
                sort_keys=True, indent=1).encode(), follow_symlinks=False)
            return
        try:
            stored = json.loads(_read_regular(meta).decode())
            if not isinstance(stored, dict):
                raise ValueError("not a JSON object")
        except (ValueError, UnicodeDecodeError) as exc:
            raise CheckpointError(f"checkpoint {self.path}: study.json is unreadable ({exc}); "
                                  "the checkpoint cannot be identified: use a fresh "
                                  "checkpoint directory") from None
        if stored.get("format") != FORMAT:
            raise CheckpointError(
                f"checkpoint {self.path} was written by an older version of restrictiveness "
                "(study.json without a format); its records are not loaded. Use a fresh "
                "checkpoint directory (or delete this one) and rerun")
        if stored.get("configuration_sha256") != self.hash:
            diff = differences(stored.get("configuration", {}), self.configuration)
            raise CheckpointError(
                f"checkpoint {self.path} was written by a different study configuration ("
                + ("; ".join(diff) or "same fields, different content") + "); use a fresh "
                "checkpoint directory or rerun the study that wrote it")
        stored_order = stored.get("procedure_order")  # absent: written before it was kept
        if stored_order is not None and stored_order != self.order:
            raise CheckpointError(
                f"checkpoint {self.path} holds the procedures in the order {stored_order}, "
                f"this study lists them as {self.order}; its records store them by position, "
                "so list the procedures in the checkpoint's order, or use a fresh checkpoint "
                "directory")
        changed = {k: (v, self.versions.get(k)) for k, v in stored.get("versions", {}).items()
                   if self.versions.get(k) != v}
        if changed:
            what = ", ".join(f"{k} {a} in the checkpoint, {b} now"
                             for k, (a, b) in changed.items())
            if not allow_other_versions:
                raise CheckpointError(
                    f"checkpoint {self.path} was written under other package versions ({what}); "
                    "its replications might not be reproduced exactly. Resume anyway with "
                    "--resume-other-versions (Python: resume_other_versions=True), or use a "
                    "fresh checkpoint directory")
            warnings.warn(f"resuming checkpoint {self.path} written under other package "
                          f"versions ({what})", CheckpointWarning, stacklevel=3)
        stored_code = stored.get("code")
        stored_code = stored_code if isinstance(stored_code, dict) else {}
        code = sorted(k for k in set(stored_code) | set(self.code)
                      if stored_code.get(k) != self.code.get(k))
        if code:
            what = ", ".join(code)
            if not allow_other_versions:
                raise CheckpointError(
                    f"checkpoint {self.path} was written by other code (changed since: {what}"
                    "; the package version alone does not show an edit); its replications "
                    "might not be those this code computes. Resume anyway with "
                    "--resume-other-versions (Python: resume_other_versions=True), or use a "
                    "fresh checkpoint directory")
            warnings.warn(f"resuming checkpoint {self.path} written by other code ({what})",
                          CheckpointWarning, stacklevel=3)

    def _remove_stale_temporaries(self) -> None:
        """Remove the temporary files of writers killed mid-write (they stay for ever
        otherwise), under the rules of the module docstring; called under ``.lock``, which
        every writer of ``study.json`` holds."""
        with os.scandir(self.path) as entries:
            found = [(e, match) for e in entries if (match := _TEMPORARY.fullmatch(e.name))]
        for entry, match in found:
            if not entry.is_file(follow_symlinks=False) or alive(int(match.group(2))):
                continue
            claim = None
            if match.group(1) is not None:  # a record's writer holds its replication's claim
                claim = FileLock(self.path / ".claims" / f"replication-{match.group(1)}",
                                 remove=True)
                try:
                    claim.acquire(blocking=False)
                except LockBusy:
                    continue
            try:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
            finally:
                if claim is not None:
                    claim.release()

    # -- records --------------------------------------------------------------------------
    def _record_files(self) -> list[Path]:
        return sorted(self.path.glob("replication-*.npz"))

    def _file(self, replication: int) -> Path:
        return self.path / f"replication-{replication:06d}.npz"

    def save(self, record: ReplicationRecord) -> None:
        """Record one finished replication (atomically) and release its claim."""
        atomic_write_bytes(self._file(record.replication),
                           encode_record(record, self.hash, self.versions,
                                         {k: v for k, v in self.identity.items()
                                          if k != "versions"}), follow_symlinks=False)
        self.release(record.replication)

    def load(self, replication: int) -> ReplicationRecord | None:
        """The stored record of ``replication``, or None if there is none or it is rejected."""
        file = self._file(replication)
        try:
            try:
                data = _read_regular(file)
            except ValueError as exc:
                raise RecordError(str(exc)) from None
            record = decode_record(data, self.hash, self._required, self._legacy)
            if record.replication != replication:
                raise RecordError(f"holds replication {record.replication}")
        except FileNotFoundError:
            return None
        except RecordError as exc:
            self._reject(file, str(exc))
            return None
        return record

    def _reject(self, file: Path, reason: str) -> None:
        folder = self.path / "rejected"
        folder.mkdir(exist_ok=True)
        # A name of its own, reserved by creating it (O_EXCL): named by the second alone, a
        # second rejection of the same replication within that second replaced the first. A
        # folder can only replace a folder, anything else only a file.
        prefix = f"{file.stem}-{time.strftime('%Y%m%d-%H%M%S')}-"
        try:
            folder_record = stat.S_ISDIR(file.lstat().st_mode)
        except FileNotFoundError:  # another run moved it first
            return
        if folder_record:
            target = Path(tempfile.mkdtemp(prefix=prefix, suffix=".npz", dir=folder))
        else:
            fd, name = tempfile.mkstemp(prefix=prefix, suffix=".npz", dir=folder)
            os.close(fd)
            target = Path(name)
        try:
            file.replace(target)
        except FileNotFoundError:  # another run moved it first
            if folder_record:
                target.rmdir()
            else:
                target.unlink()
            return
        warnings.warn(f"checkpoint record {file} {reason}; moved to {target} and recomputed",
                      CheckpointWarning, stacklevel=4)

    def done(self) -> dict[int, ReplicationRecord]:
        """Finished replications ``{replication: record}``; rejected records are moved aside."""
        out = {}
        for file in self._record_files():
            match = re.fullmatch(r"replication-(\d+)", file.stem)
            if match is None:
                self._reject(file, "has a name that is not replication-NNNNNN.npz")
                continue
            record = self.load(int(match.group(1)))
            if record is not None:
                out[record.replication] = record
        return out

    # -- sharing the work between concurrent runs ------------------------------------------
    def claim(self, replication: int) -> bool:
        """Claim ``replication`` for this run; False if another run computes or computed it."""
        if replication in self._claims:  # already ours (wait_for found its claimant gone)
            return True
        lock = FileLock(self.path / ".claims" / f"replication-{replication:06d}", remove=True)
        try:
            lock.acquire(blocking=False)
        except LockBusy:
            return False
        # kept at once: an interrupt before the check below left a held claim that close()
        # did not know of, and its file stayed behind (1 Ctrl-C in about 30)
        self._claims[replication] = lock
        if self._file(replication).exists():
            self.release(replication)
            return False
        return True

    def release(self, replication: int) -> None:
        """Give up the claim on ``replication`` (after saving it, or when stopping)."""
        lock = self._claims.pop(replication, None)
        if lock is not None:
            lock.release()

    def close(self) -> None:
        """Release every claim (a stopped run lets others compute what it had claimed)."""
        for m in list(self._claims):
            self.release(m)

    def wait_for(self, replication: int) -> ReplicationRecord | None:
        """Wait until no other run holds ``replication``, then return its record; None (and
        the claim is now this run's) if the other run stopped without finishing it."""
        lock = FileLock(self.path / ".claims" / f"replication-{replication:06d}", remove=True)
        lock.acquire()
        self._claims[replication] = lock  # kept at once, as in claim()
        record = self.load(replication)
        if record is not None:
            self.release(replication)
        return record

