"""Language-model procedures: Completion and Agent (SPEC §8; paper §3.2, §3.5, S.1.2).

Both procedures send the training sample to a language model, take the Python program it
returns and run it as a :class:`~restrictiveness.ai.programs.ProgramProcedure` in the sandbox.
They differ only in how the program is produced: **Completion** makes one call with no tools;
**Agent** may run code on the data for up to ``rounds`` tool rounds before it answers.

No vendor SDK is used. The model is any callable ``client(messages) -> str`` taking a list of
``{"role": "system" | "user" | "assistant", "content": str}`` dicts (a thin wrapper around
any chat API). Give it a ``model`` id so that :class:`ResponseCache` can key replies: with a
cache, a rerun of a study issues no model calls at all.

**Prompts.** The five designs of the paper's Table 2 are in :data:`PROMPTS`: a role message
(sent as a system message) and a prediction instruction (inside the task). The task also
contains a description of the data, the training table as CSV text, and the prediction
requirements (the ``predict(X_train, y_train, X)`` interface and the allowed libraries). The
paper's own task box is not part of its text, so the surrounding task wording here is ours;
the role messages and instructions are the paper's, verbatim for certainty equivalents.

**Agent protocol.** Each model reply is one of:

* a reply containing a fenced Python block and no ``FINAL PROGRAM`` line — the last block is
  run in the agent's working directory (``train.csv``, ``X_train.npy``, ``y_train.npy`` and any
  files saved by earlier runs; a fresh interpreter per run, numpy/scipy/pandas/scikit-learn
  allowed, 120 s by default) and its output, truncated to 8,000 characters, is the next user
  message;
* a reply with a line starting ``FINAL PROGRAM`` — its last Python block is the returned
  program;
* anything else — the model is reminded of the protocol (this uses a round).

When the rounds or the total time are used up the model is asked once more for its final
program without tools. The returned program runs with the files of the working directory
(so it may load estimates the agent saved), under the program limits (600 s by default).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import re
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..engine.protocol import Fitted, Procedure
from ..shared.exceptions import ConfigurationError
from ..shared.sample import Sample
from .programs import ProgramError, ProgramProcedure, describe_program
from .sandbox import (
    DEFAULT_ALLOWED_MODULES,
    SCIENTIFIC_MODULES,
    SandboxLimits,
    SandboxResult,
    run_python,
    workspace,
)

__all__ = ["extract_code", "PromptDesign", "PROMPTS", "build_messages", "sample_csv",
           "ResponseCache", "Completion", "Agent", "FINAL_MARKER"]

Client = Callable[[list[dict]], str]

#: A line starting with this marks an Agent reply as its final program.
FINAL_MARKER = "FINAL PROGRAM"

_OPEN = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[ \t]*$")
_CLOSE = re.compile(r"^[ \t]*```[ \t]*$")
_PYTHON = ("python", "python3", "py", "")


def _blocks(text: str) -> tuple[list[tuple[str, str]], str]:
    """Fenced blocks as (language, code) in order, and the text outside them.

    Fences pair up line by line, so a bare closing fence is never taken for an opening one.
    An unterminated last block is not a block.
    """
    blocks, outside, lang, body = [], [], None, []
    for line in text.replace("\r\n", "\n").splitlines(keepends=True):
        if lang is None:
            m = _OPEN.match(line)
            if m:
                lang, body = m.group(1).lower(), []
            else:
                outside.append(line)
        elif _CLOSE.match(line):
            blocks.append((lang, "".join(body)))
            lang = None
        else:
            body.append(line)
    if lang is not None:
        outside.extend(body)
    return blocks, "".join(outside)


def extract_code(response: str) -> str | None:
    """The last fenced Python code block of a model response (None if there is none).

    Blocks fenced as ```` ```python ````, ```` ```python3 ````, ```` ```py ```` or bare
    ```` ``` ```` count; blocks labelled with another language (```` ```bash ````) do not,
    nor does an unterminated block. Indentation common to the block (a fence inside a list
    item) is removed and line endings become ``\\n``.

    Examples
    --------
    >>> extract_code("Try:\\n```python\\nx = 1\\n```\\nthen\\n```py\\ny = 2\\n```")
    'y = 2\\n'
    >>> extract_code("```bash\\nls\\n```") is None
    True
    """
    if not isinstance(response, str):
        return None
    code = [body for lang, body in _blocks(response)[0] if lang in _PYTHON]
    return textwrap.dedent(code[-1]) if code else None


def _is_final(reply: str) -> bool:
    """A line starting with FINAL PROGRAM outside code blocks."""
    outside = _blocks(reply)[1]
    return any(line.strip().lstrip("#*> ").upper().startswith(FINAL_MARKER)
               for line in outside.splitlines())


@dataclass(frozen=True)
class PromptDesign:
    """A prompt design: the role message (system) and the prediction instruction (task).

    ``{target}`` in the instruction is replaced by what is predicted ("certainty equivalents"
    in the paper's lottery application).

    Examples
    --------
    >>> PROMPTS["neutral"].instruction_for("shares")
    'Using the supplied data, develop the best prediction algorithm you can for shares.'
    """

    name: str
    role: str | None
    instruction: str

    def instruction_for(self, target: str) -> str:
        return self.instruction.replace("{target}", target)


_NEUTRAL = "Using the supplied data, develop the best prediction algorithm you can for {target}."
_ECONOMETRICIAN = "You are an econometrician specializing in decision theory and choice under risk."
_DATA_SCIENTIST = ("You are a data scientist specializing in machine learning and predictive "
                   "modeling.")

#: The five prompt designs of the paper's Table 2 (role messages precede the task as system
#: messages; prediction instructions appear within the task).
PROMPTS: dict[str, PromptDesign] = {
    "neutral": PromptDesign("neutral", None, _NEUTRAL),
    "econometrician": PromptDesign("econometrician", _ECONOMETRICIAN, _NEUTRAL),
    "economic-model": PromptDesign(
        "economic-model", _ECONOMETRICIAN,
        "Using the supplied data, select an appropriate economic model of risk preferences, "
        "estimate its parameters, and use the estimated model to predict {target}."),
    "data-scientist": PromptDesign("data-scientist", _DATA_SCIENTIST, _NEUTRAL),
    "machine-learning": PromptDesign(
        "machine-learning", _DATA_SCIENTIST,
        "Using the supplied data, select an appropriate machine-learning method, train it, and "
        "use the trained model to predict {target}."),
}


def sample_csv(sample: Sample) -> str:
    """The training sample as CSV text: one row per observation (per market × product for
    covariates with more than two axes, with index columns first).

    Examples
    --------
    >>> import numpy as np
    >>> s = Sample(np.array([[1.0, 0.5]]), np.array([0.75]), ("z", "p"), "ce")
    >>> print(sample_csv(s), end="")
    z,p,ce
    1,0.5,0.75
    """
    X = np.asarray(sample.X, dtype=float)
    y = np.asarray(sample.y, dtype=float)
    lead = X.shape[:-1]
    # rows of a table need no index; markets of products get (market, product[, ...]) columns
    index_names = [] if len(lead) == 1 else \
        ["market", "product"] + [f"index{i}" for i in range(2, len(lead))]
    buf = io.StringIO()
    header = index_names + list(sample.columns)
    y_cols = [sample.response] if y.shape == lead else \
        [f"{sample.response}{j}" for j in range(int(np.prod(y.shape[len(lead):])))]
    buf.write(",".join(header + y_cols) + "\n")
    flat_X = X.reshape(-1, X.shape[-1])
    flat_y = y.reshape(int(np.prod(lead)), -1)
    for i, idx in enumerate(np.ndindex(*lead)):
        cells = [] if len(lead) == 1 else [str(k) for k in idx]
        cells += [f"{v:.10g}" for v in flat_X[i]] + [f"{v:.10g}" for v in flat_y[i]]
        buf.write(",".join(cells) + "\n")
    return buf.getvalue()


def _requirements(sample: Sample, program_seconds: float, agent: bool) -> str:
    X, y = np.shape(sample.X), np.shape(sample.y)
    d = ", ".join(sample.columns)
    shape_x = "(n, " + ", ".join(str(s) for s in X[1:]) + ")"
    shape_q = "(m, " + ", ".join(str(s) for s in X[1:]) + ")"
    shape_y = "(n" + "".join(f", {s}" for s in y[1:]) + ("," if len(y) == 1 else "") + ")"
    shape_p = shape_y.replace("(n", "(m")
    files = (" It may also read files that your tool runs saved in the working directory."
             if agent else "")
    return (
        "Prediction requirements: return a complete Python program that defines a function\n\n"
        "    def predict(X_train, y_train, X):\n\n"
        f"where X_train is a numpy array of shape {shape_x} whose last axis holds the "
        f"covariates ({d}) in this order, y_train is a numpy array of shape {shape_y} holding "
        f"{sample.response}, and X is a numpy array of shape {shape_q} of new covariate "
        f"values. predict must return a numpy array of shape {shape_p} with the predicted "
        f"{sample.response} for every {'row' if len(X) == 2 else 'market'} of X. The program "
        "is run in a new Python "
        "interpreter with the training data passed to predict; it may use only numpy, math "
        "and the Python standard library, has no network access, and must finish within "
        f"{program_seconds:g} seconds.{files} Put the whole program in one ```python code "
        "block.")


def _agent_instructions(rounds: int, tool_seconds: float, chars: int) -> str:
    return (
        "Tools: you can run Python code on the data before answering. To run code, reply "
        "with one ```python code block (and no line starting with "
        f"{FINAL_MARKER}). It runs in a new interpreter whose working directory contains "
        "train.csv (the table above), X_train.npy and y_train.npy (the same data as numpy "
        "arrays) and any files saved by your earlier runs; you receive its printed output "
        f"(at most {chars} characters). Code you run may use numpy, scipy, pandas and "
        f"scikit-learn; each run may take at most {tool_seconds:g} seconds, and you have at "
        f"most {rounds} runs. When you are done, reply with a message whose first line is "
        f"{FINAL_MARKER} followed by your complete program in one ```python code block; "
        "that program must meet the prediction requirements above.")


def _describe(sample: Sample) -> str:
    X = np.shape(sample.X)
    if len(X) == 2:
        return (f"The supplied data have {X[0]} observations of the covariates "
                f"({', '.join(sample.columns)}) and the outcome {sample.response}.")
    return (f"The supplied data have {X[0]} markets; each market has {X[1]} products "
            f"described by ({', '.join(sample.columns)}), and the outcome is "
            f"{sample.response} of each product.")


def _size(sample: Sample) -> str:
    shape = np.shape(sample.X)
    if len(shape) == 2:
        return f"{shape[0]} rows"
    return f"{shape[0]} markets, {int(np.prod(shape[:-1]))} rows"


def build_messages(sample: Sample, prompt: str | PromptDesign = "neutral", *,
                   target: str = "certainty equivalents", description: str | None = None,
                   program_seconds: float = 600.0, agent: bool = False, rounds: int = 20,
                   tool_seconds: float = 120.0, tool_chars: int = 8000) -> list[dict]:
    """The chat messages of a Completion or Agent task on ``sample``.

    Parameters
    ----------
    sample : Sample
        The training sample, supplied as CSV text inside the task.
    prompt : str or PromptDesign
        One of :data:`PROMPTS` ("neutral", "econometrician", "economic-model",
        "data-scientist", "machine-learning") or a custom design.
    target : str
        What is predicted, inserted in the instruction.
    description : str, optional
        What the data are (default: a sentence naming the columns and the outcome).
    program_seconds : float
        Time limit of the returned program stated in the task.
    agent : bool
        Add the tool-use instructions of the Agent protocol.
    rounds, tool_seconds, tool_chars
        Tool budget stated to the agent.

    Examples
    --------
    >>> import numpy as np
    >>> s = Sample(np.array([[10.0, 0.0, 0.5]]), np.array([4.0]), ("z_hi", "z_lo", "p"), "ce")
    >>> m = build_messages(s, "econometrician")
    >>> [x["role"] for x in m], m[0]["content"][:25]
    (['system', 'user'], 'You are an econometrician')
    """
    design = PROMPTS[prompt] if isinstance(prompt, str) and prompt in PROMPTS else prompt
    if not isinstance(design, PromptDesign):
        raise ConfigurationError(f"prompt must be one of {sorted(PROMPTS)} or a PromptDesign, "
                                 f"got {prompt!r}")
    parts = [description if description is not None else _describe(sample),
             design.instruction_for(target),
             f"Training data ({_size(sample)}, CSV):\n```csv\n{sample_csv(sample)}```",
             _requirements(sample, program_seconds, agent)]
    if agent:
        parts.append(_agent_instructions(rounds, tool_seconds, tool_chars))
    messages = [] if design.role is None else [{"role": "system", "content": design.role}]
    messages.append({"role": "user", "content": "\n\n".join(parts)})
    return messages


class ResponseCache:
    """Model replies on disk, keyed by sha256 of (model id, messages).

    One JSON file per reply (``<key>.json`` holding the model, messages and reply), written
    atomically; a rerun with the same model id and messages reads the reply instead of
    calling the model.

    Parameters
    ----------
    path : str or PathLike
        Directory (created if missing).

    Examples
    --------
    >>> import tempfile
    >>> cache = ResponseCache(tempfile.mkdtemp())
    >>> msgs = [{"role": "user", "content": "hi"}]
    >>> cache.get("m", msgs) is None
    True
    >>> cache.put("m", msgs, "hello"); cache.get("m", msgs)
    'hello'
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def key(model: str, messages: Sequence[Mapping]) -> str:
        """The sha256 hex digest of the canonical JSON of ``(model, messages)``."""
        text = json.dumps({"model": model, "messages": list(messages)}, sort_keys=True,
                          ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get(self, model: str, messages: Sequence[Mapping]) -> str | None:
        """The stored reply, or None."""
        try:
            with open(self.path / f"{self.key(model, messages)}.json", encoding="utf-8") as fh:
                reply = json.load(fh).get("response")
        except (OSError, ValueError):
            return None
        return reply if isinstance(reply, str) else None

    def put(self, model: str, messages: Sequence[Mapping], response: str) -> None:
        """Store a reply (atomically: concurrent workers never see half a file)."""
        key = self.key(model, messages)
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=f".{key}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"model": model, "messages": list(messages), "response": response}, fh,
                      ensure_ascii=False)
        os.replace(tmp, self.path / f"{key}.json")

    def __len__(self) -> int:
        return sum(1 for _ in self.path.glob("*.json"))

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"


class _FailedRule(Fitted):
    """A fit whose program could not be obtained: predict raises, info says why."""

    def __init__(self, error: ProgramError, info: dict) -> None:
        self.error = error
        self.info = {**info, "reason": error.reason, "message": str(error)}

    def predict(self, X):
        raise self.error


class _LanguageModelProcedure(Procedure):
    """Shared machinery: the client, its model id, the cache and the program limits."""

    #: One training sample per pseudo-truth in studies with within-function averaging (K > 1),
    #: as in the paper: model calls are expensive. Set ``proc.draws = K`` to use more.
    draws: int | None = 1

    def __init__(self, client: Client, prompt: str | PromptDesign, model: str | None,
                 target: str, description: str | None, timeout: float,
                 limits: SandboxLimits | None, allowed_modules: Iterable[str] | None,
                 cache: ResponseCache | str | os.PathLike | None,
                 label: str | None, run_at_fit: bool = True) -> None:
        if not callable(client):
            raise ConfigurationError("client must be a callable client(messages) -> str")
        if isinstance(prompt, str) and prompt not in PROMPTS:
            raise ConfigurationError(f"prompt must be one of {sorted(PROMPTS)}, got {prompt!r}")
        self.client, self.prompt = client, prompt
        self.model = model if model is not None else str(getattr(client, "model", "unknown"))
        self.target, self.description = target, description
        self.limits = limits if limits is not None else SandboxLimits(wall_seconds=timeout)
        self.allowed_modules = None if allowed_modules is None else frozenset(allowed_modules)
        # a path, not the object, so the procedure pickles small and workers share the files
        self.cache = str(cache.path) if isinstance(cache, ResponseCache) else \
            (None if cache is None else str(cache))
        if label is not None:
            self.label = label
        self.run_at_fit = bool(run_at_fit)

    def _ask(self, messages: list[dict], calls: list[int]) -> str:
        cache = ResponseCache(self.cache) if self.cache is not None else None
        if cache is not None:
            hit = cache.get(self.model, messages)
            if hit is not None:
                return hit
        reply = self.client(copy.deepcopy(messages))
        calls[0] += 1
        if not isinstance(reply, str):
            raise ConfigurationError(f"client returned {type(reply).__name__}, expected str")
        if cache is not None:
            cache.put(self.model, messages, reply)
        return reply

    def _prompt_name(self) -> str:
        return self.prompt if isinstance(self.prompt, str) else self.prompt.name

    def _program(self, code: str | None, sample: Sample, rng: np.random.Generator,
                 info: dict, files: Mapping[str, bytes] | None = None) -> Fitted:
        if code is None:
            return _FailedRule(ProgramError("invalid-output", "the response contains no Python "
                                                              "code block"),
                               {**info, **describe_program("")})
        proc = ProgramProcedure(code, "predict", limits=self.limits,
                                allowed_modules=self.allowed_modules, label=self.label,
                                files=files, run_at_fit=self.run_at_fit)
        return proc.fit(sample, rng, info=info)


class Completion(_LanguageModelProcedure):
    """One language-model call, no tools; its program is the procedure (paper §3.2).

    Parameters
    ----------
    client : callable
        ``client(messages) -> str``; must pickle for parallel studies.
    prompt : str or PromptDesign
        A design of :data:`PROMPTS` (Table 2) or a custom one.
    model : str, optional
        Model id for the cache key (default: ``client.model`` if present).
    target : str
        What is predicted, for the instruction ("certainty equivalents").
    description : str, optional
        Description of the data in the task.
    timeout : float
        Seconds allowed to each run of the returned program (600 in the paper).
    limits : SandboxLimits, optional
        Full limits of the program runs (overrides ``timeout``).
    allowed_modules : iterable of str, optional
        Modules the returned program may import (default numpy, math, standard library).
    cache : ResponseCache or path, optional
        Reply cache: a rerun makes no client calls.
    label : str
        Name in results.
    run_at_fit : bool
        Run the returned program once at fit time (on the training points), so failures
        are known when the fit is recorded; False saves that run.

    Notes
    -----
    ``Fitted.info`` holds the program, its sha256, the model id, the prompt design, the
    reply's sha256, ``client_calls`` (0 on a cached rerun), ``rounds_used`` (0), the failure
    ``reason`` (None on success) and the classification hooks of
    :func:`~restrictiveness.ai.programs.describe_program` (``estimates_parameters``,
    ``uses_training_data``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> def client(messages):
    ...     return "```python\\ndef predict(X_train, y_train, X):\\n" \\
    ...            "    return [float(y_train.mean())] * len(X)\\n```"
    >>> s = Sample(np.zeros((2, 1)), np.array([1.0, 3.0]), ("x",))
    >>> rule = Completion(client, model="fake", timeout=60).fit(s, np.random.default_rng(0))
    >>> rule.predict(np.zeros((1, 1))), rule.info["client_calls"]
    (array([2.]), 1)
    """

    label = "Completion"

    def __init__(self, client: Client, prompt: str | PromptDesign = "neutral", *,
                 model: str | None = None, target: str = "certainty equivalents",
                 description: str | None = None, timeout: float = 600.0,
                 limits: SandboxLimits | None = None,
                 allowed_modules: Iterable[str] | None = None,
                 cache: ResponseCache | str | os.PathLike | None = None,
                 label: str | None = None, run_at_fit: bool = True) -> None:
        super().__init__(client, prompt, model, target, description, timeout, limits,
                         allowed_modules, cache, label, run_at_fit)

    def fit(self, sample: Sample, rng: np.random.Generator) -> Fitted:
        messages = build_messages(sample, self.prompt, target=self.target,
                                  description=self.description,
                                  program_seconds=self.limits.wall_seconds)
        calls = [0]
        reply = self._ask(messages, calls)
        info = {"procedure": "Completion", "model": self.model, "prompt": self._prompt_name(),
                "response_sha256": hashlib.sha256(reply.encode()).hexdigest(),
                "client_calls": calls[0], "rounds_used": 0}
        return self._program(extract_code(reply), sample, rng, info)


def _tool_report(result: SandboxResult, workdir: str, chars: int) -> str:
    """What the agent sees of a run: status, then output truncated to ``chars`` (the tail,
    where errors are). Paths of the working directory are shown relative, so the text is
    the same on every rerun (and cache keys match)."""
    head = "Run finished." if result.ok else f"Run failed ({result.reason}): {result.message}"
    out = result.stdout
    if result.stderr.strip():
        out += ("\n[stderr]\n" if out else "[stderr]\n") + result.stderr
    text = f"{head}\n[output]\n{out}" if out.strip() else f"{head}\n[no output]"
    text = text.replace(workdir + "/", "").replace(workdir, ".")
    if len(text) > chars:
        text = "[output truncated]\n" + text[-(chars - 19):]
    return text


class Agent(_LanguageModelProcedure):
    """A language model that may run code on the data before returning its program.

    Follows the protocol of the module docstring: up to ``rounds`` tool runs (each a fresh
    sandboxed interpreter in a working directory kept across the agent's runs), then a
    program marked ``FINAL PROGRAM``.

    Parameters
    ----------
    client : callable
        ``client(messages) -> str``.
    prompt : str or PromptDesign
        A design of :data:`PROMPTS`.
    rounds : int
        Tool-round budget (20 in the paper).
    tool_timeout : float
        Seconds per tool run (120 in the paper).
    total_seconds : float
        Wall-clock budget of the whole tool phase (two hours in the paper).
    tool_chars : int
        Characters of output returned per tool run (8,000 in the paper).
    tool_modules : iterable of str, optional
        Modules tool code may import (default: the program's plus scipy, pandas, sklearn).
    tool_limits : SandboxLimits, optional
        Full limits of a tool run (overrides ``tool_timeout``).
    max_file_bytes : int
        Most bytes of working-directory files handed to the returned program.
    record_transcript : bool
        Keep the whole conversation in ``info["transcript"]`` (large).
    model, target, description, timeout, limits, allowed_modules, cache, label, run_at_fit
        As :class:`Completion`.

    Notes
    -----
    ``Fitted.info`` adds to Completion's: ``rounds_used``, ``hit_limit`` (budget exhausted
    before a final answer), ``tool_runs`` (ok/reason of each run) and ``files`` (names of the
    files handed to the returned program).

    Examples
    --------
    >>> import numpy as np
    >>> replies = iter(["```python\\nimport numpy as np\\nprint(np.load('y_train.npy'))\\n```",
    ...                 "FINAL PROGRAM\\n```python\\ndef predict(X_train, y_train, X):\\n"
    ...                 "    return [2.0] * len(X)\\n```"])
    >>> agent = Agent(lambda m: next(replies), model="fake", timeout=60)
    >>> s = Sample(np.zeros((2, 1)), np.array([1.0, 3.0]), ("x",))
    >>> rule = agent.fit(s, np.random.default_rng(0))
    >>> rule.info["rounds_used"], rule.predict(np.zeros((1, 1)))
    (1, array([2.]))
    """

    label = "Agent"

    def __init__(self, client: Client, prompt: str | PromptDesign = "neutral", *,
                 rounds: int = 20, tool_timeout: float = 120.0, total_seconds: float = 7200.0,
                 tool_chars: int = 8000, tool_modules: Iterable[str] | None = None,
                 tool_limits: SandboxLimits | None = None, model: str | None = None,
                 target: str = "certainty equivalents", description: str | None = None,
                 timeout: float = 600.0, limits: SandboxLimits | None = None,
                 allowed_modules: Iterable[str] | None = None,
                 cache: ResponseCache | str | os.PathLike | None = None,
                 label: str | None = None, max_file_bytes: int = 20 * 2**20,
                 run_at_fit: bool = True, record_transcript: bool = False) -> None:
        super().__init__(client, prompt, model, target, description, timeout, limits,
                         allowed_modules, cache, label, run_at_fit)
        self.record_transcript = bool(record_transcript)
        if int(rounds) < 0:
            raise ConfigurationError("rounds must be nonnegative")
        if not total_seconds > 0 or not tool_chars > 100:
            raise ConfigurationError("total_seconds must be positive and tool_chars above 100")
        self.rounds, self.total_seconds, self.tool_chars = int(rounds), float(total_seconds), \
            int(tool_chars)
        self.tool_limits = tool_limits if tool_limits is not None else \
            SandboxLimits(wall_seconds=tool_timeout)
        self.tool_modules = frozenset(tool_modules) if tool_modules is not None else \
            frozenset(DEFAULT_ALLOWED_MODULES | SCIENTIFIC_MODULES)
        self.max_file_bytes = int(max_file_bytes)

    def _snapshot(self, work: Path) -> dict[str, bytes]:
        """Files the agent left in its working directory, for the returned program."""
        files, total = {}, 0
        for path in sorted(work.iterdir()):
            if path.name.startswith(".") or path.is_symlink() or not path.is_file() or \
                    path.name == "program.py":
                continue
            try:
                size = path.stat().st_size
                if total + size > self.max_file_bytes:
                    continue
                files[path.name] = path.read_bytes()
            except OSError:  # unreadable (permissions changed by the agent's code): skip it
                continue
            total += size
        return files

    def fit(self, sample: Sample, rng: np.random.Generator) -> Fitted:
        messages = build_messages(sample, self.prompt, target=self.target,
                                  description=self.description,
                                  program_seconds=self.limits.wall_seconds, agent=True,
                                  rounds=self.rounds,
                                  tool_seconds=self.tool_limits.wall_seconds,
                                  tool_chars=self.tool_chars)
        seed = int(rng.integers(2**31 - 1))
        calls, runs = [0], []
        hit_limit, final_reply = False, None
        with workspace(prefix="rx-agent-") as work:  # deleted whatever the tool runs left
            (work / "train.csv").write_text(sample_csv(sample))
            np.save(work / "X_train.npy", np.asarray(sample.X, dtype=float))
            np.save(work / "y_train.npy", np.asarray(sample.y, dtype=float))
            start, used = time.monotonic(), 0
            while True:
                reply = self._ask(messages, calls)
                messages.append({"role": "assistant", "content": reply})
                if _is_final(reply) or used >= self.rounds or hit_limit:
                    final_reply = reply
                    break
                code = extract_code(reply)
                if code is None:
                    feedback = (f"No code block found. Reply with one ```python block to run, "
                                f"or with {FINAL_MARKER} and your complete program.")
                else:
                    result = run_python(code, workdir=work, limits=self.tool_limits,
                                        allowed_modules=self.tool_modules,
                                        seed=seed + len(runs))
                    runs.append({"ok": result.ok, "reason": result.reason})
                    feedback = _tool_report(result, str(work), self.tool_chars)
                used += 1
                if used >= self.rounds or time.monotonic() - start > self.total_seconds:
                    hit_limit = True
                    feedback += (f"\n\nThe tool budget is used up. Reply now with "
                                 f"{FINAL_MARKER} and your complete program; no more code will "
                                 "be run.")
                messages.append({"role": "user", "content": feedback})
            files = self._snapshot(work)
        info = {"procedure": "Agent", "model": self.model, "prompt": self._prompt_name(),
                "response_sha256": hashlib.sha256(final_reply.encode()).hexdigest(),
                "client_calls": calls[0], "rounds_used": len(runs), "hit_limit": hit_limit,
                "tool_runs": runs, "files": sorted(files),
                "tool_isolation": self.tool_limits.isolation}
        if self.record_transcript:
            info["transcript"] = messages
        return self._program(extract_code(final_reply), sample, rng, info, files or None)
