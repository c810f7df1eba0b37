"""Language-model procedures: Completion and Agent (SPEC §8; paper §3.2, §3.5, S.1.2).

Both procedures send the training sample to a language model, take the Python program it
returns and run it as a :class:`~restrictiveness.ai.programs.ProgramProcedure` in the sandbox.
They differ only in how the program is produced: **Completion** makes one call with no tools;
**Agent** may run code on the data for up to ``rounds`` tool rounds before it answers.

The model is a client: :class:`~restrictiveness.ai.clients.OpenAIChat` (OpenAI and every
OpenAI-compatible server) or :class:`~restrictiveness.ai.clients.AnthropicChat`, exported as
``rx.llm.OpenAIChat`` and ``rx.llm.AnthropicChat``, or any callable ``client(messages) -> str``
taking a list of ``{"role": "system" | "user" | "assistant", "content": str}`` dicts. With an
adapter, calls are retried on rate limits and transient errors, and every call's tokens,
latency and retries go into ``Fitted.info``; a call that finally fails makes the fit fail with
reason ``"client"`` (the baseline takes its place). A :class:`ResponseCache` keys replies by the
endpoint, the model, the sampling parameters and the messages: a rerun of a study issues no
model calls at all. Language-model procedures are ``io_bound``: ``Study.run(concurrency=N)``
fits them on N threads.

**Prompts.** The five designs of the paper's Table 2 are in :data:`PROMPTS`: a role message
(sent as a system message) and a prediction instruction (inside the task). The task also
contains a description of the data, the training table as CSV text, and the prediction
requirements (the ``predict(X_train, y_train, X)`` interface and the allowed libraries). The
paper's own task box is not part of its text, so the surrounding task wording here is ours;
the role messages and instructions are the paper's, verbatim for certainty equivalents.

**Agent protocol.** With a client that supports native tool calls (the adapters), the agent
is offered one tool, ``run_python(code)``; each call runs the code in the agent's working
directory (``train.csv``, ``X_train.npy``, ``y_train.npy`` and any files saved by earlier runs;
a fresh interpreter per run, numpy/scipy/pandas/scikit-learn allowed, 120 s by default) and its
output, truncated to 8,000 characters, is the tool's result; a reply without tool calls is the
final answer, whose last Python block is the returned program. With a plain callable (or
``tool_protocol="text"``) the same happens in text; each model reply is one of:

* a reply containing a fenced Python block and no ``FINAL PROGRAM`` line — the last block is
  run as above and its report is the next user message;
* a reply with a line starting ``FINAL PROGRAM`` — its last Python block is the returned
  program;
* anything else — the model is reminded of the protocol (this uses a round).

Either way each tool run (and, in text, each reminder) uses one of ``rounds`` rounds (20 in the
paper); when the rounds or the
total time are used up the model is asked once more for its final program, with tools
disabled. The returned program runs with the files of the working directory (so it may load
estimates the agent saved), under the program limits (600 s by default).
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
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from ..engine.protocol import Fitted, Procedure
from ..shared.checks import flag, whole_number
from ..shared.exceptions import ConfigurationError
from ..shared.sample import Sample
from .clients import (
    AnthropicChat,
    BudgetExhausted,
    CallBudget,
    ChatAdapter,
    ChatReply,
    ClientError,
    OpenAIChat,
    Tool,
    ToolCall,
    _is_real,
    call_client,
)
from .programs import ProgramError, ProgramProcedure, describe_program, run_limits
from .sandbox import (
    DEFAULT_ALLOWED_MODULES,
    SCIENTIFIC_MODULES,
    SandboxLimits,
    SandboxResult,
    run_python,
    workspace,
)
from .sandbox.limits import module_names
from .sandbox.runner import relative_paths

__all__ = ["extract_code", "PromptDesign", "PROMPTS", "build_messages", "sample_csv",
           "ResponseCache", "Completion", "Agent", "FINAL_MARKER", "RUN_PYTHON",
           # the client adapters (restrictiveness.ai.clients), here so that rx.llm has them
           "OpenAIChat", "AnthropicChat", "ChatAdapter", "ChatReply", "ClientError", "Tool",
           "ToolCall", "CallBudget", "BudgetExhausted"]

Client = Callable[[list[dict]], str]

#: A line starting with this marks an Agent reply as its final program.
FINAL_MARKER = "FINAL PROGRAM"

# A Markdown (CommonMark) code fence: three or more backticks or tildes, then an info string
# whose first word is the language (a backtick fence's info string holds no backtick).
_FENCE = re.compile(r"^[ \t]*(`{3,}(?=[^`]*$)|~{3,})(.*)$")
_PYTHON = ("python", "python3", "py", "")
_MARKDOWN = ("markdown", "md")
#: How deep wrappers (a reply fenced whole, an unterminated fence) are read into; a bound, so
#: that a reply of many nested or unclosed fences costs time linear in its length.
_MAX_NESTING = 4


def _blocks(text: str, depth: int = 0) -> tuple[list[tuple[str, str]], str]:
    """Fenced blocks as (language, code) in order, and the text outside them.

    Fences follow Markdown: a block opens with three or more backticks or tildes and an
    optional info string (``python title="m.py"``: the language is its first word) and closes
    with a line of the same character, at least as long, and nothing else; fences pair up line
    by line, so a bare closing fence is never taken for an opening one. An unterminated last
    block is not a block: its fence line is text and what follows it is read again (a
    truncated reply wrapped in a longer fence keeps the blocks it closed). Line endings
    become ``\\n``.
    """
    blocks: list = []
    outside: list[str] = []
    body: list[str] = []
    lang: str | None = None
    fence = opening = ""
    for line in re.sub(r"\r\n?", "\n", text).splitlines(keepends=True):
        m = _FENCE.match(line.rstrip("\n"))
        if lang is None:
            if m:
                fence, info = m.groups()
                lang, body, opening = (info.split() or [""])[0].lower(), [], line
            else:
                outside.append(line)
        elif m and not m.group(2).strip() and m.group(1)[0] == fence[0] \
                and len(m.group(1)) >= len(fence):
            blocks.append((lang, "".join(body)))
            lang = None
        else:
            body.append(line)
    if lang is not None:
        inner, rest = _blocks("".join(body), depth + 1) if depth < _MAX_NESTING \
            else ([], "".join(body))
        blocks.extend(inner)
        outside.append(opening + rest)
    return blocks, "".join(outside)


def _read(text: str, depth: int = 0) -> tuple[list[str], str]:
    """The Python blocks of ``text`` in order and the text outside every block, reading into
    wrappers: a block labelled ``markdown``, or an unlabelled one that holds fenced Python
    blocks (a reply fenced whole in a longer fence)."""
    code: list[str] = []
    blocks, outside = _blocks(text, depth)
    texts = [outside]
    for lang, body in blocks:
        inner = _read(body, depth + 1) if depth < _MAX_NESTING and lang in ("", *_MARKDOWN) \
            else None
        if inner is not None and (lang in _MARKDOWN or inner[0]):
            code.extend(inner[0])
            texts.append(inner[1])
        elif lang in _PYTHON:
            code.append(body)
    return code, "".join(texts)


def extract_code(response: str) -> str | None:
    """The last fenced Python code block of a model response (None if there is none).

    Markdown code blocks fenced by three or more backticks or tildes labelled ``python``,
    ``python3``, ``py`` or not labelled count (the label is the first word of the fence's
    info string), also inside a wrapper: a block labelled ``markdown``, or an unlabelled block
    that holds fenced Python blocks. Blocks labelled with another language (``bash``) do not
    count, nor does an unterminated block. Indentation common to the block (a fence inside a
    list item) is removed and line endings become ``\\n``.

    Parameters
    ----------
    response : str
        The model's reply text (anything else gives None).

    Returns
    -------
    str or None
        The code of the last Python block.

    Examples
    --------
    >>> extract_code("Try:\\n```python\\nx = 1\\n```\\nthen\\n```py\\ny = 2\\n```")
    'y = 2\\n'
    >>> extract_code("```bash\\nls\\n```") is None
    True
    """
    if not isinstance(response, str):
        return None
    code = _read(response)[0]
    return textwrap.dedent(code[-1]) if code else None


def _is_final(reply: str) -> bool:
    """A line starting with FINAL PROGRAM outside code blocks (wrappers read into)."""
    return any(line.strip().lstrip("#*> ").upper().startswith(FINAL_MARKER)
               for line in _read(reply)[1].splitlines())


@dataclass(frozen=True)
class PromptDesign:
    """A prompt design: the role message (system) and the prediction instruction (task).

    ``{target}`` in the instruction is replaced by what is predicted ("certainty equivalents"
    in the paper's lottery application).

    Parameters
    ----------
    name : str
        The design's label (results name procedures after it).
    role : str or None
        The role message, sent as a system message before the task (None: no role).
    instruction : str
        The prediction instruction inside the task, with ``{target}`` where the predicted
        quantity goes.

    Examples
    --------
    >>> PROMPTS["neutral"].instruction_for("shares")
    'Using the supplied data, develop the best prediction algorithm you can for shares.'
    """

    name: str
    role: str | None
    instruction: str

    def instruction_for(self, target: str) -> str:
        """The instruction with ``{target}`` replaced.

        Parameters
        ----------
        target : str
            What is predicted, e.g. ``"certainty equivalents"``.

        Returns
        -------
        str

        Examples
        --------
        >>> design = PromptDesign("terse", None, "Predict {target}.")
        >>> design.instruction_for("market shares")
        'Predict market shares.'
        """
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

    Parameters
    ----------
    sample : Sample
        The training sample; its columns and response name the CSV columns (a response with
        several columns per row is numbered: ``share0``, ``share1``, ...).

    Returns
    -------
    str
        A header line, then one line per row; numbers with 10 significant digits.

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


def _libraries(modules: Iterable[str] | None, default: frozenset[str], default_words: str
               ) -> str:
    """What the task says code may import: ``default_words`` for the default allow-list, else
    the list given (its packages beside "the Python standard library" when it holds the
    default's standard-library modules, else every module by name). The model was told the
    default's libraries whatever the allow-list: its code used modules refused to it, or never
    those added for it.

    Examples
    --------
    >>> _libraries(None, DEFAULT_ALLOWED_MODULES, "the defaults")
    'the defaults'
    >>> _libraries(DEFAULT_ALLOWED_MODULES | {"scipy"}, DEFAULT_ALLOWED_MODULES, "the defaults")
    'only numpy, scipy and the Python standard library'
    >>> _libraries({"numpy", "math"}, DEFAULT_ALLOWED_MODULES, "the defaults")
    'only the modules math and numpy'
    """
    if modules is None or set(modules) == set(default):
        return default_words
    chosen = set(modules)
    stdlib = DEFAULT_ALLOWED_MODULES - {"numpy"}
    if stdlib <= chosen:
        return "only " + ", ".join(sorted(chosen - stdlib)) + " and the Python standard library"
    names = sorted(chosen)
    return "only the modules " + (" and ".join(names) if len(names) < 3
                                  else ", ".join(names[:-1]) + " and " + names[-1])


def _requirements(sample: Sample, program_seconds: float, agent: bool,
                  allowed_modules: Iterable[str] | None = None) -> str:
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
        "interpreter with the training data passed to predict; it may use "
        f"{_libraries(allowed_modules, DEFAULT_ALLOWED_MODULES, _PROGRAM_LIBRARIES)}, "
        "has no network access, and must finish within "
        f"{program_seconds:g} seconds.{files} Put the whole program in one ```python code "
        "block.")


#: What the task says by default of the modules the returned program and tool code may use.
_PROGRAM_LIBRARIES = "only numpy, math and the Python standard library"
_TOOL_LIBRARIES = "numpy, scipy, pandas and scikit-learn"


def _agent_instructions(rounds: int, tool_seconds: float, chars: int, native: bool,
                        tool_modules: Iterable[str] | None = None) -> str:
    tools = _libraries(tool_modules, DEFAULT_ALLOWED_MODULES | SCIENTIFIC_MODULES,
                       _TOOL_LIBRARIES)
    env = ("It runs in a new interpreter whose working directory contains "
           "train.csv (the table above), X_train.npy and y_train.npy (the same data as numpy "
           "arrays) and any files saved by your earlier runs; you receive its printed output "
           f"(at most {chars} characters). Code you run may use {tools}; each run may take at "
           f"most {tool_seconds:g} seconds, and you have at most {rounds} runs.")
    if native:
        return ("Tools: you can run Python code on the data before answering by calling the "
                f"{RUN_PYTHON.name} tool with the code. {env} When you are done, reply without "
                "calling the tool, with your complete program in one ```python code block; "
                "that program must meet the prediction requirements above.")
    return ("Tools: you can run Python code on the data before answering. To run code, reply "
            f"with one ```python code block (and no line starting with {FINAL_MARKER}). {env} "
            f"When you are done, reply with a message whose first line is {FINAL_MARKER} "
            "followed by your complete program in one ```python code block; that program must "
            "meet the prediction requirements above.")


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
                   tool_seconds: float = 120.0, tool_chars: int = 8000,
                   tool_protocol: str = "text", allowed_modules: Iterable[str] | None = None,
                   tool_modules: Iterable[str] | None = None) -> list[dict]:
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
    tool_protocol : {"text", "native"}
        How the agent is told to run code: fenced blocks, or the ``run_python`` tool.
    allowed_modules, tool_modules : iterable of str, optional
        The modules the returned program and the agent's tool code may import, as the task
        states them (default: the sandbox's defaults).

    Returns
    -------
    list of dict
        Provider-neutral messages: the role as a system message (if the design has one), then
        the task as one user message.

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
             _requirements(sample, program_seconds, agent, allowed_modules)]
    if tool_protocol not in ("text", "native"):
        raise ConfigurationError(f"tool_protocol must be 'text' or 'native', got "
                                 f"{tool_protocol!r}")
    if agent:
        parts.append(_agent_instructions(rounds, tool_seconds, tool_chars,
                                         tool_protocol == "native", tool_modules))
    messages = [] if design.role is None else [{"role": "system", "content": design.role}]
    messages.append({"role": "user", "content": "\n\n".join(parts)})
    return messages


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class ResponseCache:
    """Model replies on disk, keyed by the client's identity, the request and the messages.

    The key is the sha256 of the canonical JSON of the client's identity (provider, endpoint
    base URL, model, sampling parameters: :meth:`ChatAdapter.cache_identity
    <restrictiveness.ai.clients.ChatAdapter.cache_identity>`, or ``{"model": id}`` for a plain
    callable), the request options (tools offered, tool choice) and the messages. One JSON
    file per reply (``<key>.json``, holding all of these and the reply with its usage), written
    atomically; a read checks that the stored identity, request and messages are the ones
    asked for. A rerun with the same client and messages reads the reply instead of calling
    the model; two models, endpoints or temperatures never share an entry.

    Directories written by restrictiveness 0.1 (keys of model id and messages only, no
    endpoint or sampling parameters) are refused with an explanation rather than misread;
    :meth:`migrate` re-keys their replies for a client the user vouches for.

    Parameters
    ----------
    path : str or PathLike
        Directory (created if missing; a ``FORMAT`` file marks its layout). Processes and
        threads may create and fill the same directory at once.

    Examples
    --------
    >>> import tempfile
    >>> cache = ResponseCache(tempfile.mkdtemp())
    >>> msgs = [{"role": "user", "content": "hi"}]
    >>> cache.get({"model": "m"}, msgs) is None
    True
    >>> cache.put({"model": "m"}, msgs, "hello"); cache.get({"model": "m"}, msgs).text
    'hello'
    >>> cache.get({"model": "m2"}, msgs) is None
    True
    """

    #: Layout version written to the ``FORMAT`` file.
    FORMAT = 2
    _MARKER = "FORMAT"

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # e.g. a file of that name: FileExistsError
            raise ConfigurationError(f"ResponseCache: {str(path)!r} cannot be used as a cache "
                                     f"folder ({exc.strerror or exc})") from None
        marker = self.path / self._MARKER
        text = self._read_marker()
        # Another process may be creating this folder at this moment: it writes its marker
        # before any entry, so entries without a marker are old only if the marker is still
        # absent once the entries have been seen.
        if text is None and any(self.path.glob("*.json")):
            text = self._read_marker()
            if text is None:
                raise ConfigurationError(
                    f"ResponseCache({str(self.path)!r}) holds replies in the format of "
                    "restrictiveness 0.1, keyed by model id and messages only (no endpoint or "
                    "sampling parameters), so they cannot be attributed safely and are not "
                    "read. Use a new directory, or re-key them for the client that wrote them "
                    "with ResponseCache.migrate(path, client).")
        if text is None:
            # concurrent creators each replace the marker atomically, with the same text
            self._write(marker, self._marker_text())
        elif text != self._marker_text():
            raise ConfigurationError(
                f"ResponseCache({str(self.path)!r}): unknown cache format {text!r} "
                f"(this version reads {self._marker_text()!r}); use another directory")

    def _read_marker(self) -> str | None:
        """The FORMAT marker's text, or None when there is none (it is written atomically,
        so it is never seen half-written)."""
        try:
            return (self.path / self._MARKER).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:  # a folder, unreadable, not text
            raise ConfigurationError(f"ResponseCache({str(self.path)!r}): its {self._MARKER} "
                                     f"marker cannot be read ({exc}); use another "
                                     "directory") from None

    @classmethod
    def _marker_text(cls) -> str:
        return f"restrictiveness response cache, format {cls.FORMAT}"

    @staticmethod
    def _identity(identity: Mapping | str) -> dict:
        ident = {"model": identity} if isinstance(identity, str) else dict(identity)
        if not ident.get("model"):
            raise ConfigurationError("a reply cache needs the client's model id "
                                     "(identity['model'])")
        return ident

    @classmethod
    def key(cls, identity: Mapping | str, messages: Sequence[Mapping],
            request: Mapping | None = None) -> str:
        """The sha256 hex digest of the canonical JSON of identity, request and messages.

        Parameters
        ----------
        identity : mapping or str
            The client's :meth:`~restrictiveness.ai.clients.ChatAdapter.cache_identity`, or a
            model id (``{"model": id}``).
        messages : sequence of dict
            The messages sent.
        request : mapping, optional
            Request options (tools offered, tool choice).

        Returns
        -------
        str
            64 hex digits; the entry's file name is ``<key>.json``.

        Examples
        --------
        >>> msgs = [{"role": "user", "content": "hi"}]
        >>> ResponseCache.key("m", msgs) == ResponseCache.key({"model": "m"}, msgs)
        True
        >>> ResponseCache.key({"model": "m", "temperature": 0.0}, msgs) == ResponseCache.key(
        ...     {"model": "m", "temperature": 1.0}, msgs)
        False
        """
        return hashlib.sha256(_canonical(
            {"format": cls.FORMAT, "client": cls._identity(identity),
             "request": dict(request or {}), "messages": list(messages)}
        ).encode("utf-8")).hexdigest()

    def get(self, identity: Mapping | str, messages: Sequence[Mapping],
            request: Mapping | None = None) -> ChatReply | None:
        """The stored reply, or None (also for an unreadable or mismatching entry).

        Parameters
        ----------
        identity : mapping or str
            The client's cache identity, or a model id.
        messages : sequence of dict
            The messages sent.
        request : mapping, optional
            Request options (tools offered, tool choice).

        Returns
        -------
        ChatReply or None

        Examples
        --------
        >>> import tempfile
        >>> cache = ResponseCache(tempfile.mkdtemp())
        >>> msgs = [{"role": "user", "content": "hi"}]
        >>> cache.put("m", msgs, ChatReply("hello", input_tokens=1, output_tokens=1))
        >>> cache.get("m", msgs).output_tokens, cache.get("m", msgs, {"tools": ["x"]})
        (1, None)
        """
        ident = self._identity(identity)
        try:
            with open(self.path / f"{self.key(ident, messages, request)}.json",
                      encoding="utf-8") as fh:
                entry = json.load(fh)
            if _canonical([entry["client"], entry["request"], entry["messages"]]) != \
                    _canonical([ident, dict(request or {}), list(messages)]):
                return None
            return ChatReply.from_json(entry["reply"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, identity: Mapping | str, messages: Sequence[Mapping],
            reply: ChatReply | str, request: Mapping | None = None) -> None:
        """Store a reply (atomically: concurrent workers never see half a file).

        Parameters
        ----------
        identity : mapping or str
            The client's cache identity, or a model id.
        messages : sequence of dict
            The messages sent.
        reply : ChatReply or str
            The reply (a string is a reply without usage counts).
        request : mapping, optional
            Request options (tools offered, tool choice).

        Examples
        --------
        >>> import tempfile
        >>> cache = ResponseCache(tempfile.mkdtemp())
        >>> cache.put({"model": "m"}, [{"role": "user", "content": "hi"}], "hello")
        >>> len(cache)
        1
        """
        ident = self._identity(identity)
        reply = ChatReply(reply) if isinstance(reply, str) else reply
        entry = {"client": ident, "request": dict(request or {}), "messages": list(messages),
                 "reply": reply.to_json()}
        self._write(self.path / f"{self.key(ident, messages, request)}.json",
                    json.dumps(entry, ensure_ascii=False))

    def _write(self, target: Path, text: str) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)  # no half-written temporary left behind (a full disk)
            raise

    @classmethod
    def migrate(cls, path: str | os.PathLike, client) -> int:
        """Re-key a restrictiveness 0.1 cache directory, in place, for ``client``.

        Old entries recorded only a model id; those whose model id equals ``client``'s are
        stored under ``client``'s full identity (endpoint and sampling parameters), the caller
        vouching that they came from it; the others are left out. The old files are removed.

        Parameters
        ----------
        path : str or PathLike
            The old cache directory.
        client : ChatAdapter, callable, mapping or str
            The client that wrote the replies (its cache identity is used), or its identity.

        Returns
        -------
        int
            Replies kept.

        Examples
        --------
        >>> import json, pathlib, tempfile
        >>> old = pathlib.Path(tempfile.mkdtemp())
        >>> msgs = [{"role": "user", "content": "hi"}]
        >>> for i, model in enumerate(["m", "other"]):
        ...     entry = {"model": model, "messages": msgs, "response": "hello"}
        ...     _ = (old / f"{i}.json").write_text(json.dumps(entry))
        >>> ResponseCache.migrate(old, {"model": "m", "temperature": 0.0})
        1
        >>> ResponseCache(old).get({"model": "m", "temperature": 0.0}, msgs).text
        'hello'
        """
        ident = cls._identity(client if isinstance(client, (str, Mapping))
                              else _client_identity(client, None) or {})
        root = Path(path)
        if (root / cls._MARKER).exists():
            raise ConfigurationError(f"ResponseCache.migrate: {str(root)!r} is already in the "
                                     "current format")
        old = sorted(root.glob("*.json"))
        entries = []
        for file in old:
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("model") == ident["model"] and \
                    isinstance(data.get("response"), str):
                entries.append((data["messages"], data["response"]))
        for file in old:
            file.unlink()
        cache = cls(root)
        for messages, response in entries:
            cache.put(ident, messages, response)
        return len(entries)

    def __len__(self) -> int:
        return sum(1 for _ in self.path.glob("*.json"))

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"


def _client_identity(client, model: str | None) -> dict | None:
    """The cache identity of a client: its own (adapters), else ``{"model": id}`` from
    ``model`` or ``client.model``; None when no model id is known."""
    own = getattr(client, "cache_identity", None)
    if callable(own):
        ident = dict(own())
        if model is not None and model != ident.get("model"):
            raise ConfigurationError(f"model={model!r} differs from the client's model "
                                     f"{ident.get('model')!r}; leave model= unset with an "
                                     "adapter")
        return ident
    model = model if model is not None else getattr(client, "model", None)
    return None if model is None else {"model": str(model)}


def _request(tools: Sequence[Tool] | None, tool_choice: str) -> dict | None:
    """The request options that shape a reply besides the messages (part of cache keys)."""
    return {"tools": [t.to_json() for t in tools], "tool_choice": tool_choice} if tools \
        else None


class _CallLog:
    """The model calls of one fit: per-call usage and their totals for ``Fitted.info``."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def add(self, reply: ChatReply, cached: bool) -> None:
        self.calls.append({"cached": cached, "input_tokens": reply.input_tokens,
                           "output_tokens": reply.output_tokens,
                           "seconds": round(reply.seconds, 6), "retries": reply.retries,
                           "stop_reason": reply.stop_reason})

    def add_failure(self, error: ClientError) -> None:
        self.calls.append({"cached": False, "failed": True, "input_tokens": None,
                           "output_tokens": None, "seconds": None, "retries": error.retries,
                           "status": error.status})

    def info(self) -> dict:
        live = [c for c in self.calls if not c["cached"]]
        usage = {"calls": len(live), "cached_calls": len(self.calls) - len(live),
                 "failed_calls": sum(1 for c in live if c.get("failed")),
                 # answered, but the token sums below miss their counts (cost unknown)
                 "unreported_calls": sum(1 for c in live if not c.get("failed") and (
                     c["input_tokens"] is None or c["output_tokens"] is None)),
                 "retries": sum(c["retries"] for c in live),
                 "input_tokens": sum(c["input_tokens"] or 0 for c in live),
                 "output_tokens": sum(c["output_tokens"] or 0 for c in live),
                 "seconds": round(sum(c["seconds"] or 0.0 for c in live), 6)}
        return {"client_calls": len(live), "usage": usage, "calls": self.calls}


class _FailedRule(Fitted):
    """A fit whose program could not be obtained: predict raises, info says why."""

    def __init__(self, error: ProgramError, info: dict) -> None:
        self.error = error
        self.info = {**info, "reason": error.reason, "message": str(error)}

    def predict(self, X):
        raise self.error


class _LanguageModelProcedure(Procedure):
    """Shared machinery: the client, its identity, the cache, usage and the program limits."""

    #: One training sample per pseudo-truth in studies with within-function averaging (K > 1),
    #: as in the paper: model calls are expensive. Set ``proc.draws = K`` to use more.
    draws: int | None = 1
    #: Fits wait on the model: ``Study.run(concurrency=N)`` runs them on N threads.
    io_bound = True

    def __init__(self, client: Client, prompt: str | PromptDesign, model: str | None,
                 target: str, description: str | None, timeout: float | None,
                 limits: SandboxLimits | None, allowed_modules: Iterable[str] | None,
                 cache: ResponseCache | str | os.PathLike | None,
                 label: str | None, run_at_fit: bool = True) -> None:
        if not callable(client):
            raise ConfigurationError("client must be a callable client(messages) -> str, e.g. "
                                     "rx.llm.OpenAIChat(model)")
        if isinstance(prompt, str) and prompt not in PROMPTS:
            raise ConfigurationError(f"prompt must be one of {sorted(PROMPTS)}, got {prompt!r}")
        self.client, self.prompt = client, prompt
        self.identity = _client_identity(client, model)
        # a custom client's identity without a model id (or an empty one) has none: a cache
        # is then refused below, not a KeyError here or a failure at every fit's first call
        self.model = None if self.identity is None else self.identity.get("model") or None
        # a target of None read "... prediction algorithm you can for None."
        if not isinstance(target, str) or not target.strip():
            raise ConfigurationError(f"target must be a nonempty text (what is predicted, e.g. "
                                     f"'certainty equivalents'), got {target!r}")
        if description is not None and not isinstance(description, str):
            raise ConfigurationError(f"description must be a text or None, got "
                                     f"{type(description).__name__}")
        self.target, self.description = target, description
        self.limits = run_limits(timeout, limits)
        self.allowed_modules = None if allowed_modules is None else \
            module_names(allowed_modules)
        if cache is not None:
            if self.model is None:
                raise ConfigurationError(
                    "cache: the client has no model id, so its replies cannot be told from "
                    "another model's; pass model='...' (or give the client a `model` "
                    "attribute, as rx.llm.OpenAIChat has)")
            cache = cache if isinstance(cache, ResponseCache) else ResponseCache(cache)
        # a path, not the object, so the procedure pickles small and workers share the files
        self.cache = None if cache is None else str(cache.path)
        if label is not None:
            self.label = label
        self.run_at_fit = flag(run_at_fit, "run_at_fit")  # "no" was True

    def _ask(self, messages: list[dict], log: _CallLog, tools: Sequence[Tool] | None = None,
             tool_choice: Literal["auto", "none"] = "auto") -> ChatReply:
        """One model reply (from the cache when it holds it); raises ClientError."""
        request = _request(tools, tool_choice)
        identity = self.identity  # never None with a cache: __init__ refuses a cache without it
        cache = (ResponseCache(self.cache) if self.cache is not None and identity is not None
                 else None)
        if cache is not None and identity is not None:
            hit = cache.get(identity, messages, request)
            if hit is not None:
                log.add(hit, cached=True)
                return hit
        try:
            reply = call_client(self.client, copy.deepcopy(messages), tools, tool_choice)
        except ClientError as exc:
            # a call refused before any request was sent (no API key, budget used up) is no
            # call: usage counted one per fit that cost nothing
            if exc.sent and not (isinstance(exc, BudgetExhausted) and exc.retries == 0):
                log.add_failure(exc)
            raise
        log.add(reply, cached=False)
        if cache is not None and identity is not None:
            try:
                cache.put(identity, messages, reply, request)
            except OSError as exc:  # a full or read-only disk must not discard a paid reply
                warnings.warn(f"{cache!r}: a reply was not stored ({exc}); the fit goes on "
                              "without it", RuntimeWarning, stacklevel=2)
        return reply

    def _prompt_name(self) -> str:
        return self.prompt if isinstance(self.prompt, str) else self.prompt.name

    def _program(self, code: str | None, sample: Sample, rng: np.random.Generator,
                 info: dict, files: Mapping[str, bytes] | None = None) -> Fitted:
        if code is None:
            why = "the response contains no Python code block"
            calls = info.get("calls") or [{}]
            if calls[-1].get("stop_reason") in ("length", "max_tokens"):
                # a reply cut mid-block has no closed block: "no code block" alone sent the
                # researcher looking at the prompt, not at the output-token limit
                why += (" (the reply was cut off at the output-token limit, stop reason "
                        f"{calls[-1]['stop_reason']!r}: raise max_tokens)")
            return _FailedRule(ProgramError("invalid-output", why),
                               {**info, **describe_program("")})
        proc = ProgramProcedure(code, "predict", limits=self.limits,
                                allowed_modules=self.allowed_modules, label=self.label,
                                files=files, run_at_fit=self.run_at_fit)
        return proc.fit(sample, rng, info=info)

    def _client_failure(self, error: ClientError, info: dict) -> Fitted:
        """The fit when the model could not be asked: reason "client", baseline used."""
        return _FailedRule(ProgramError("client", str(error)), {**info, **describe_program("")})


class Completion(_LanguageModelProcedure):
    """One language-model call, no tools; its program is the procedure (paper §3.2).

    Parameters
    ----------
    client : callable
        ``rx.llm.OpenAIChat(...)``, ``rx.llm.AnthropicChat(...)`` or any ``client(messages)
        -> str``; it must pickle for studies on worker processes (``n_jobs > 1``, dask) unless
        the study runs language-model fits on threads (``concurrency=N``).
    prompt : str or PromptDesign
        A design of :data:`PROMPTS` (Table 2) or a custom one.
    model : str, optional
        Model id of a plain callable, for the cache key (default: ``client.model`` if
        present); adapters carry their own. A cache needs one.
    target : str
        What is predicted, for the instruction ("certainty equivalents").
    description : str, optional
        Description of the data in the task.
    timeout : float, optional
        Seconds allowed to each run of the returned program (default 600, as the paper).
    limits : SandboxLimits, optional
        Full limits of the program runs (their ``wall_seconds`` is the wall clock; a
        different ``timeout`` beside them is refused).
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
    reply's sha256, ``client_calls`` (0 on a cached rerun), ``calls`` (each call's
    ``input_tokens``, ``output_tokens``, ``seconds``, ``retries``, ``stop_reason`` and whether
    it was ``cached``; a failed call has ``failed`` and its HTTP ``status``), ``usage`` (their
    totals over calls actually made: ``calls``, ``cached_calls``, ``failed_calls``,
    ``unreported_calls`` (answered without token counts), ``retries``, ``input_tokens``,
    ``output_tokens`` (the reported counts), ``seconds``; see ``Results.usage()``),
    ``rounds_used`` (0), the failure ``reason`` (None on success; ``"client"`` when the model
    call failed) and the classification hooks of
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
                 description: str | None = None, timeout: float | None = None,
                 limits: SandboxLimits | None = None,
                 allowed_modules: Iterable[str] | None = None,
                 cache: ResponseCache | str | os.PathLike | None = None,
                 label: str | None = None, run_at_fit: bool = True) -> None:
        super().__init__(client, prompt, model, target, description, timeout, limits,
                         allowed_modules, cache, label, run_at_fit)

    #: Most model calls of one fit.
    max_calls = 1

    def first_request(self, sample: Sample) -> tuple[list[dict], dict | None]:
        """The messages of the fit's first model call and its request options (for cache
        keys and call planning).

        Parameters
        ----------
        sample : Sample
            The training sample.

        Returns
        -------
        messages : list of dict
            As :func:`build_messages`.
        request : None
            A completion offers no tools.

        Examples
        --------
        >>> import numpy as np
        >>> s = Sample(np.zeros((2, 1)), np.array([1.0, 3.0]), ("x",))
        >>> messages, request = Completion(print, "econometrician").first_request(s)
        >>> [m["role"] for m in messages], request
        (['system', 'user'], None)
        """
        return build_messages(sample, self.prompt, target=self.target,
                              description=self.description,
                              program_seconds=self.limits.wall_seconds,
                              allowed_modules=self.allowed_modules), None

    def fit(self, sample: Sample, rng: np.random.Generator) -> Fitted:
        """Ask the model once and return its program as the fitted rule.

        Parameters
        ----------
        sample : Sample
            The training sample, sent as CSV inside the task.
        rng : Generator
            Seeds the program's sandboxed runs.

        Returns
        -------
        Fitted
            A :class:`~restrictiveness.ai.programs.ProgramRule`, or a rule whose ``predict``
            raises :class:`~restrictiveness.ai.programs.ProgramError` when the reply holds no
            code (reason ``"invalid-output"``) or the model call failed (``"client"``);
            ``info`` records the calls, their usage and the reply's sha256.

        Examples
        --------
        >>> import numpy as np
        >>> s = Sample(np.zeros((2, 1)), np.array([1.0, 3.0]), ("x",))
        >>> reply = ("```python\\ndef predict(X_train, y_train, X):\\n"
        ...          "    return [2.0] * len(X)\\n```")
        >>> proc = Completion(lambda messages: reply, model="fake", run_at_fit=False)
        >>> rule = proc.fit(s, np.random.default_rng(0))
        >>> rule.info["client_calls"], rule.info["program"].splitlines()[0]
        (1, 'def predict(X_train, y_train, X):')
        >>> no_code = Completion(lambda messages: "I cannot help.", model="fake")
        >>> no_code.fit(s, np.random.default_rng(0)).info["reason"]
        'invalid-output'
        """
        messages, _ = self.first_request(sample)
        log = _CallLog()
        info = {"procedure": "Completion", "model": self.model, "prompt": self._prompt_name(),
                "rounds_used": 0}
        try:
            reply = self._ask(messages, log)
        except ClientError as exc:
            return self._client_failure(exc, {**info, **log.info()})
        info.update(log.info(), response_sha256=hashlib.sha256(reply.text.encode()).hexdigest())
        return self._program(extract_code(reply.text), sample, rng, info)


def _tool_report(result: SandboxResult, workdir: str, chars: int) -> str:
    """What the agent sees of a run: status, then output truncated to ``chars`` (the tail,
    where errors are). Paths of the working directory are shown relative, so the text is
    the same on every rerun (and cache keys match)."""
    head = "Run finished." if result.ok else f"Run failed ({result.reason}): {result.message}"
    out = result.stdout
    if result.stderr.strip():
        out += ("\n[stderr]\n" if out else "[stderr]\n") + result.stderr
    text = f"{head}\n[output]\n{out}" if out.strip() else f"{head}\n[no output]"
    text = relative_paths(text, workdir)
    if len(text) > chars:
        text = "[output truncated]\n" + text[-(chars - 19):]
    return text


#: The agent's code-execution tool in the native tool protocol.
RUN_PYTHON = Tool(
    "run_python",
    "Run Python code in a new interpreter in the working directory that holds the data "
    "(train.csv, X_train.npy, y_train.npy) and files saved by earlier runs; returns the "
    "printed output (truncated).",
    {"type": "object",
     "properties": {"code": {"type": "string", "description": "The Python code to run."}},
     "required": ["code"]})

TOOL_PROTOCOLS = ("auto", "native", "text")


class Agent(_LanguageModelProcedure):
    """A language model that may run code on the data before returning its program.

    Follows the protocol of the module docstring: up to ``rounds`` tool runs (each a fresh
    sandboxed interpreter in a working directory kept across the agent's runs), through the
    endpoint's native tool calls or the text protocol, then a final program.

    Parameters
    ----------
    client : callable
        As :class:`Completion`.
    prompt : str or PromptDesign
        A design of :data:`PROMPTS`.
    rounds : int
        Tool-round budget (20 in the paper).
    tool_timeout : float, optional
        Seconds per tool run (default 120, as the paper).
    total_seconds : float
        Wall-clock budget of the whole tool phase (two hours in the paper).
    tool_chars : int
        Characters of output returned per tool run (8,000 in the paper).
    tool_modules : iterable of str, optional
        Modules tool code may import (default: the program's plus scipy, pandas, sklearn).
    tool_limits : SandboxLimits, optional
        Full limits of a tool run (their ``wall_seconds`` is the wall clock; a different
        ``tool_timeout`` beside them is refused).
    max_file_bytes : int
        Most bytes of working-directory files handed to the returned program.
    record_transcript : bool
        Keep the whole conversation in ``info["transcript"]`` (large).
    tool_protocol : {"auto", "native", "text"}
        ``"native"``: the endpoint's tool calls (OpenAI tools, Anthropic tool use; needs a
        client with ``chat()``, as the adapters); ``"text"``: fenced code blocks and a
        ``FINAL PROGRAM`` line, for any client; ``"auto"``: native when the client supports
        it (``client.supports_tools``), else text. Use ``"text"`` for a server without tool
        support.
    model, target, description, timeout, limits, allowed_modules, cache, label, run_at_fit
        As :class:`Completion`.

    Notes
    -----
    ``Fitted.info`` adds to Completion's: ``tool_protocol`` (the one used), ``rounds_used``
    (tool runs), ``hit_limit`` (budget exhausted before a final answer), ``tool_runs``
    (ok/reason of each run), ``files`` (names of the files handed to the returned program)
    and ``files_left_out`` (files of the working directory not handed to it, with why: over
    ``max_file_bytes``, a folder or link, unreadable).

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
                 rounds: int = 20, tool_timeout: float | None = None, total_seconds: float = 7200.0,
                 tool_chars: int = 8000, tool_modules: Iterable[str] | None = None,
                 tool_limits: SandboxLimits | None = None, model: str | None = None,
                 target: str = "certainty equivalents", description: str | None = None,
                 timeout: float | None = None, limits: SandboxLimits | None = None,
                 allowed_modules: Iterable[str] | None = None,
                 cache: ResponseCache | str | os.PathLike | None = None,
                 label: str | None = None, max_file_bytes: int = 20 * 2**20,
                 run_at_fit: bool = True, record_transcript: bool = False,
                 tool_protocol: str = "auto") -> None:
        super().__init__(client, prompt, model, target, description, timeout, limits,
                         allowed_modules, cache, label, run_at_fit)
        self.record_transcript = flag(record_transcript, "record_transcript")
        rounds = whole_number(rounds, "rounds", minimum=0)  # None was a bare TypeError
        # "100" and None were a bare TypeError, True a budget of 1 s (inf: no limit)
        if not (_is_real(total_seconds) and total_seconds > 0):
            raise ConfigurationError(f"total_seconds must be a positive number of seconds, got "
                                     f"{total_seconds!r}")
        # 1000.7 was truncated, and max_file_bytes=-1 (meant as "no limit") handed the
        # returned program none of the files the agent saved
        tool_chars = whole_number(tool_chars, "tool_chars", minimum=101)
        if tool_protocol not in TOOL_PROTOCOLS:
            raise ConfigurationError(f"tool_protocol must be one of {TOOL_PROTOCOLS}, got "
                                     f"{tool_protocol!r}")
        native = bool(getattr(client, "supports_tools", False)) and \
            callable(getattr(client, "chat", None))
        if tool_protocol == "native" and not native:
            raise ConfigurationError("tool_protocol='native' needs a client with native tool "
                                     "calls (rx.llm.OpenAIChat, rx.llm.AnthropicChat); use "
                                     "'text' for this client")
        self.tool_protocol = "native" if tool_protocol == "auto" and native else \
            ("text" if tool_protocol == "auto" else tool_protocol)
        self.rounds, self.total_seconds, self.tool_chars = rounds, float(total_seconds), \
            int(tool_chars)
        self.tool_limits = run_limits(tool_timeout, tool_limits, 120.0,
                                      ("tool_timeout", "tool_limits"))
        self.tool_modules = module_names(
            DEFAULT_ALLOWED_MODULES | SCIENTIFIC_MODULES if tool_modules is None
            else tool_modules, "tool_modules")
        self.max_file_bytes = whole_number(max_file_bytes, "max_file_bytes", minimum=0)

    def _snapshot(self, work: Path) -> tuple[dict[str, bytes], dict[str, str]]:
        """Files the agent left in its working directory, for the returned program, and those
        left out with why (a program that reads one fails: its record says why it is not
        there)."""
        files: dict[str, bytes] = {}
        left_out: dict[str, str] = {}
        total = 0
        for path in sorted(work.iterdir()):
            if path.name.startswith(".") or path.name == "program.py":
                continue  # the sandbox's own
            if path.is_symlink() or not path.is_file():
                left_out[path.name] = "not a plain file (a folder or a link)"
                continue
            try:
                size = path.stat().st_size
                if total + size > self.max_file_bytes:
                    left_out[path.name] = (f"{size} bytes would pass max_file_bytes="
                                           f"{self.max_file_bytes}")
                    continue
                files[path.name] = path.read_bytes()
            except OSError as exc:  # unreadable (permissions changed by the agent's code)
                left_out[path.name] = f"unreadable ({exc.strerror or exc})"
                continue
            total += size
        return files, left_out

    @property
    def max_calls(self) -> int:
        """Most model calls of one fit: one per round and the final answer."""
        return self.rounds + 1

    def first_request(self, sample: Sample) -> tuple[list[dict], dict | None]:
        """The messages of the fit's first model call and its request options.

        Parameters
        ----------
        sample : Sample
            The training sample.

        Returns
        -------
        messages : list of dict
            As :func:`build_messages` with the agent's tool instructions.
        request : dict or None
            The tools offered and the tool choice (native tool protocol), else None.

        Examples
        --------
        >>> import numpy as np
        >>> s = Sample(np.zeros((2, 1)), np.array([1.0, 3.0]), ("x",))
        >>> messages, request = Agent(print, rounds=3).first_request(s)
        >>> [m["role"] for m in messages], request
        (['user'], None)
        """
        messages = build_messages(sample, self.prompt, target=self.target,
                                  description=self.description,
                                  program_seconds=self.limits.wall_seconds, agent=True,
                                  rounds=self.rounds,
                                  tool_seconds=self.tool_limits.wall_seconds,
                                  tool_chars=self.tool_chars, tool_protocol=self.tool_protocol,
                                  allowed_modules=self.allowed_modules,
                                  tool_modules=self.tool_modules)
        native = self.tool_protocol == "native"
        return messages, _request((RUN_PYTHON,), "none" if self.rounds == 0 else "auto") \
            if native else None

    def fit(self, sample: Sample, rng: np.random.Generator) -> Fitted:
        """Run the agent's tool phase on ``sample`` and return its final program.

        Parameters
        ----------
        sample : Sample
            The training sample, in the task as CSV and in the working directory as
            ``train.csv``, ``X_train.npy`` and ``y_train.npy``.
        rng : Generator
            Seeds the tool runs and the program's runs.

        Returns
        -------
        Fitted
            As :meth:`Completion.fit`; ``info`` adds the tool phase (see Notes of the class).

        Examples
        --------
        A model that answers at once, without running code:

        >>> import numpy as np
        >>> s = Sample(np.zeros((2, 1)), np.array([1.0, 3.0]), ("x",))
        >>> final = ("FINAL PROGRAM\\n```python\\ndef predict(X_train, y_train, X):\\n"
        ...          "    return [2.0] * len(X)\\n```")
        >>> agent = Agent(lambda messages: final, model="fake", run_at_fit=False)
        >>> rule = agent.fit(s, np.random.default_rng(0))
        >>> rule.info["rounds_used"], rule.info["client_calls"], rule.info["tool_protocol"]
        (0, 1, 'text')
        """
        native = self.tool_protocol == "native"
        messages, _ = self.first_request(sample)
        log = _CallLog()
        info = {"procedure": "Agent", "model": self.model, "prompt": self._prompt_name(),
                "tool_protocol": self.tool_protocol}
        session = _ToolSession(self, int(rng.integers(2**31 - 1)))
        with workspace(prefix="rx-agent-") as work:  # deleted whatever the tool runs left
            (work / "train.csv").write_text(sample_csv(sample))
            np.save(work / "X_train.npy", np.asarray(sample.X, dtype=float))
            np.save(work / "y_train.npy", np.asarray(sample.y, dtype=float))
            session.work = work
            try:
                final = (self._native_rounds if native else self._text_rounds)(
                    messages, log, session)
            except ClientError as exc:
                info.update(log.info(), rounds_used=len(session.runs),
                            hit_limit=session.hit_limit, tool_runs=session.runs, files=[])
                return self._client_failure(exc, info)
            files, left_out = self._snapshot(work)
        info.update(log.info(), response_sha256=hashlib.sha256(final.encode()).hexdigest(),
                    rounds_used=len(session.runs), hit_limit=session.hit_limit,
                    tool_runs=session.runs, files=sorted(files), files_left_out=left_out,
                    tool_isolation=self.tool_limits.isolation)
        if self.record_transcript:
            info["transcript"] = messages
        return self._program(extract_code(final), sample, rng, info, files or None)

    def _text_rounds(self, messages: list[dict], log: _CallLog, session: _ToolSession) -> str:
        """The text protocol; returns the final reply's text."""
        while True:
            reply = self._ask(messages, log).text
            messages.append({"role": "assistant", "content": reply})
            if _is_final(reply) or session.used >= self.rounds or session.hit_limit:
                return reply
            code = extract_code(reply)
            feedback = session.run(code) if code is not None else session.reminder(
                f"No code block found. Reply with one ```python block to run, or with "
                f"{FINAL_MARKER} and your complete program.")
            if session.check_budget():
                feedback += (f"\n\nThe tool budget is used up. Reply now with {FINAL_MARKER} "
                             "and your complete program; no more code will be run.")
            messages.append({"role": "user", "content": feedback})

    def _native_rounds(self, messages: list[dict], log: _CallLog, session: _ToolSession
                       ) -> str:
        """The native tool protocol; returns the final reply's text."""
        session.hit_limit = self.rounds == 0
        while True:
            reply = self._ask(messages, log, tools=(RUN_PYTHON,),
                              tool_choice="none" if session.hit_limit else "auto")
            messages.append(reply.message())
            if not reply.tool_calls or session.hit_limit:
                return reply.text
            for call in reply.tool_calls:
                code = call.arguments.get("code") if call.name == RUN_PYTHON.name else None
                if session.hit_limit:
                    result = "Not run: the tool budget is used up."
                elif isinstance(code, str):
                    result = session.run(code)
                else:
                    result = session.reminder(f"Not run: call the {RUN_PYTHON.name} tool with "
                                              "a string argument 'code'.")
                session.check_budget()
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            if session.hit_limit:
                messages.append({"role": "user", "content":
                                 "The tool budget is used up. Reply now with your complete "
                                 "program in one ```python code block; no more code will be "
                                 "run."})


class _ToolSession:
    """An agent's tool phase: its working directory, runs and budget (rounds and time)."""

    def __init__(self, agent: Agent, seed: int) -> None:
        self.agent, self.seed = agent, seed
        self.work: Path | None = None
        self.runs: list[dict] = []
        self.used, self.hit_limit = 0, False
        self.start = time.monotonic()

    def run(self, code: str) -> str:
        """Run tool code in the working directory; the report the model sees."""
        a = self.agent
        result = run_python(code, workdir=self.work, limits=a.tool_limits,
                            allowed_modules=a.tool_modules, seed=self.seed + len(self.runs))
        self.runs.append({"ok": result.ok, "reason": result.reason})
        self.used += 1
        return _tool_report(result, str(self.work), a.tool_chars)

    def reminder(self, text: str) -> str:
        """A reply that ran nothing still uses a round."""
        self.used += 1
        return text

    def check_budget(self) -> bool:
        """Mark (and say) whether the rounds or the total time are used up."""
        if self.used >= self.agent.rounds or \
                time.monotonic() - self.start > self.agent.total_seconds:
            self.hit_limit = True
        return self.hit_limit
