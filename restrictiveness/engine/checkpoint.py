"""Checkpoints of a study: finished replications on disk, so a killed run resumes.

A checkpoint is a directory holding ``study.json`` (the study's configuration) and one file per
finished replication, written atomically (temporary file, then rename), so a crash loses at most
the replications in flight. Restarted with the same configuration, a run loads what is done and
runs the rest; records are assembled in replication order, so the results are identical to an
uninterrupted run. A checkpoint written under another configuration is refused.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import tempfile
from pathlib import Path

from ..shared.exceptions import CheckpointError

__all__ = ["Checkpoint"]

#: Modules whose records were pickled before the package moved into layered subpackages.
_MOVED = {"restrictiveness.study": "restrictiveness.engine.study"}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        return super().find_class(_MOVED.get(module, module), name)


def _identity(configuration: dict) -> str:
    # Object reprs may carry memory addresses (e.g. a user's client); they say nothing about
    # what is computed, so they must not make a resumed run look different.
    text = json.dumps(configuration, sort_keys=True)
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


class Checkpoint:
    """Finished replications of one study configuration in a directory.

    Parameters
    ----------
    path : str or Path
        Directory (created if needed).
    configuration : dict
        The study's :meth:`~restrictiveness.study.Study.configuration`.

    Examples
    --------
    >>> import tempfile
    >>> ck = Checkpoint(tempfile.mkdtemp(), {"seed": 1})
    >>> ck.done()
    {}
    """

    def __init__(self, path, configuration: dict) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        identity = _identity(configuration)
        meta = self.path / "study.json"
        if meta.exists():
            stored = json.loads(meta.read_text())
            if _identity(stored) != identity:
                raise CheckpointError(
                    f"checkpoint {self.path} was written by a different study configuration; "
                    "use a fresh checkpoint path or rerun the study that wrote it")
        else:
            self._atomic_write(meta, json.dumps(configuration, sort_keys=True).encode())

    def _file(self, replication: int) -> Path:
        return self.path / f"replication-{replication:06d}.pkl"

    def _atomic_write(self, target: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def save(self, record) -> None:
        """Record one finished replication (atomically)."""
        self._atomic_write(self._file(record.replication), pickle.dumps(record))

    def done(self) -> dict:
        """Finished replications: ``{replication: record}``. The files are this package's own
        records, written by :meth:`save`; a checkpoint directory is trusted like a results file."""
        out = {}
        for file in sorted(self.path.glob("replication-*.pkl")):
            with open(file, "rb") as fh:
                record = _Unpickler(fh).load()
            out[record.replication] = record
        return out
