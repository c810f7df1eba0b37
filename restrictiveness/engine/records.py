"""One replication's results and their file form (arrays in ``.npz``, metadata in JSON).

A :class:`ReplicationRecord` is what one replication contributes to a study's results. On disk
(a checkpoint) it is a NumPy ``.npz`` archive of its numeric arrays plus one JSON string holding
the rest (the replication index, the failure messages, the fit records, the configuration hash,
the package versions, and what a checkpoint adds: the procedures' order and a digest of the code)
and a SHA-256 of the whole content. Nothing is pickled: loading uses ``allow_pickle=False``, so
a record written by someone else can at worst be rejected, never run code.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ReplicationRecord", "RecordError", "encode_record", "decode_record"]

#: Version of the record layout; a record of another layout is rejected (and recomputed).
RECORD_FORMAT = 2
_ARRAYS = ("loss", "baseline_loss", "failed", "invalid", "seconds", "baseline_seconds")
_META = "__meta__"
_DIAG = "diagnostics."
_SCALE = "truth_scale"  # optional: records of earlier versions lack it and still load
#: How a record's identity fields are named in a rejection.
_IDENTITY = {"procedure_order": "order of the procedures", "versions": "package versions",
             "code_sha256": "code"}


@dataclass
class ReplicationRecord:
    """Everything one replication contributes to the results (small, picklable)."""

    replication: int
    loss: np.ndarray            # (procedure, discrepancy, n, draw); NaN where not run
    baseline_loss: np.ndarray   # (discrepancy, n, draw)
    failed: np.ndarray          # (procedure, n) fits that failed in any draw
    invalid: np.ndarray         # (procedure, n) prediction rows replaced by the baseline
    seconds: np.ndarray         # (procedure, n) mean wall time of a fit
    baseline_seconds: np.ndarray  # (n,)
    error: np.ndarray           # (procedure, n) first failure message ('' if none)
    info: np.ndarray            # (procedure, n) JSON of the first draw's Fitted.info
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (n,)
    # (discrepancy, n) Discrepancy.scale of the truth; None (unknown) in records written before
    truth_scale: np.ndarray | None = None


class RecordError(ValueError):
    """A stored record cannot be used; the message says why (unreadable, checksum, ...)."""


def _digest(arrays: dict[str, np.ndarray], meta: dict) -> str:
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def encode_record(record: ReplicationRecord, configuration_hash: str,
                  versions: dict[str, str], identity: Mapping[str, object] | None = None
                  ) -> bytes:
    """The ``.npz`` bytes of ``record``, tagged with the study's configuration hash and the
    ``identity`` fields (JSON values: what else :func:`decode_record` may be asked to match,
    such as the procedures' order)."""
    arrays = {name: np.asarray(getattr(record, name)) for name in _ARRAYS}
    arrays.update({_DIAG + k: np.asarray(v) for k, v in record.diagnostics.items()})
    if record.truth_scale is not None:
        arrays[_SCALE] = np.asarray(record.truth_scale)
    meta = {"format": RECORD_FORMAT, "replication": int(record.replication),
            "configuration_sha256": configuration_hash, "versions": versions,
            "error": np.asarray(record.error, dtype=str).tolist(),
            "info": np.asarray(record.info, dtype=str).tolist(),
            "error_shape": list(np.shape(record.error)), **(identity or {})}
    meta["sha256"] = _digest(arrays, meta)
    buf = io.BytesIO()
    # The names are ours (never allow_pickle, a keyword only from numpy 2.1, which numpy's
    # stubs let **arrays fill); passing it would add an array under numpy 1.26.
    np.savez(buf, **arrays, **{_META: np.array(json.dumps(meta))})  # type: ignore[arg-type]
    return buf.getvalue()


def decode_record(data: bytes, configuration_hash: str,
                  identity: Mapping[str, object] | None = None,
                  legacy: Collection[str] = ()) -> ReplicationRecord:
    """The record in ``data``; :class:`RecordError` if it is unreadable, fails its checksum,
    was written under another configuration, or differs in a field of ``identity`` (its
    value as the record must hold it; the message names the field). A field named in
    ``legacy`` may be absent (records written before it existed)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            content = {name: z[name] for name in z.files}
        meta = json.loads(str(content.pop(_META)))
        if not isinstance(meta, dict):
            raise TypeError("metadata is not a JSON object")
    except Exception as exc:  # noqa: BLE001 - any damage reads as "unreadable"
        raise RecordError(f"unreadable ({type(exc).__name__}: {exc})") from None
    stored = meta.pop("sha256", None)
    if stored != _digest(content, meta):
        raise RecordError("fails its SHA-256 checksum (the file was altered or damaged)")
    if meta.get("format") != RECORD_FORMAT:
        raise RecordError(f"has record format {meta.get('format')!r}, not {RECORD_FORMAT}")
    if meta.get("configuration_sha256") != configuration_hash:
        raise RecordError("belongs to another study configuration")
    differ = [_IDENTITY.get(key, key) for key, value in (identity or {}).items()
              if meta.get(key, value if key in legacy else None) != value]
    if differ:
        raise RecordError(f"does not match this checkpoint's {' and '.join(differ)} (copied "
                          "from another checkpoint directory?)")
    shape = tuple(meta["error_shape"])
    strings = {k: np.array(meta[k], dtype=object).reshape(shape) for k in ("error", "info")}
    diagnostics = {k[len(_DIAG):]: v for k, v in content.items() if k.startswith(_DIAG)}
    return ReplicationRecord(replication=int(meta["replication"]),
                             **{k: content[k] for k in _ARRAYS},
                             error=strings["error"], info=strings["info"], diagnostics=diagnostics,
                             truth_scale=content.get(_SCALE))
