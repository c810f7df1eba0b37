"""Chat-model clients: adapters for the official ``openai`` and ``anthropic`` SDKs (SPEC §8).

:class:`~restrictiveness.ai.llm.Completion` and :class:`~restrictiveness.ai.llm.Agent` accept
any callable ``client(messages) -> str``. The adapters here add what a study of hundreds of
model calls needs:

* **One line per endpoint.** :class:`OpenAIChat` speaks the Chat Completions API through the
  ``openai`` SDK, so it serves OpenAI and every OpenAI-compatible server (vLLM, llama.cpp's
  server, Ollama, LM Studio: pass ``base_url``); :class:`AnthropicChat` speaks the Messages API
  through the ``anthropic`` SDK.
* **Picklable configuration.** An adapter holds settings only; the SDK client is created lazily
  in each process (and thread-safely shared by the threads of a process), so adapters travel to
  worker processes and dask workers. The API key never appears in ``repr``.
* **Robust calls.** The SDK's own retries are switched off and replaced by one policy whose
  attempts are counted: rate limits (429, honouring ``Retry-After`` / ``retry-after-ms`` up
  to :data:`RETRY_AFTER_MAX` seconds; an unreadable or negative value falls back to backoff),
  408/409, server errors (5xx), timeouts and dropped connections are retried up to
  ``max_retries`` times with exponential backoff and jitter (``backoff`` seconds doubling up to
  ``backoff_max``); other errors (400, 401, 403, 404, 422) are not retried. An endpoint's
  ``x-should-retry: true`` or ``false`` header decides instead, as in the SDKs' own policy
  (``false`` marks an error that would recur, such as an exhausted quota). A call that finally
  fails raises :class:`ClientError`, which the language-model procedures record as a failed fit
  with reason ``"client"`` (the baseline takes its place), never a crashed study. A reply that
  is not a chat reply (an HTML page, JSON without ``choices`` or ``content``) is a
  :class:`ClientError` too, not retried, never an empty answer. So is a redirect (3xx), which
  is not followed: the message names where it points (following it would resend the prompt
  to another host, or, for 301 and 302, as a GET without its messages). Each attempt — connecting,
  sending the request, reading the status line, headers and body — takes at most ``timeout``
  seconds in all, enforced at the socket: every connect, send and receive waits at most the
  time left, and a watchdog shuts the socket down at the deadline (the SDK's timeout bounds
  each network read only, so a server trickling bytes would otherwise hold a call for ever);
  an attempt that runs out of time is a timeout, retried as one; the same holds through the
  proxies the environment names (``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, ...). Looking up
  the host name counts too: a resolver that does not answer in the time left fails the attempt
  as a timeout (the lookup, which the C library cannot interrupt, is abandoned to finish on its
  own thread). A reply body is read up to
  :data:`MAX_REPLY_BYTES` bytes, counted as received and again once decoded: the adapters
  accept only the gzip and deflate content encodings, which they decode a 64 KiB piece at a
  time (a small compressed body can expand a thousandfold), and refuse any other. A larger
  reply, or one in another encoding, raises :class:`ClientError`, not retried.
* **Budgets.** A :class:`CallBudget` given to adapters (``budget=``) limits the requests they
  send and the tokens they use; once it is used up, requests are refused with
  :class:`BudgetExhausted`, never sent or retried. Replies from a reply cache cost nothing.
* **Usage.** Each call returns a :class:`ChatReply` with the text, any tool calls, input and
  output tokens, the wall time of the call (retries and waits included) and its retry count.
  A count the endpoint reports that is not a nonnegative integer (or is absent) reads as None.
* **Native tool calling.** ``chat(messages, tools=...)`` maps provider-neutral messages and
  tools to OpenAI function tools or Anthropic tool use, so the Agent can use the endpoint's own
  tool protocol.
* **Cache identity.** :meth:`ChatAdapter.cache_identity` names the endpoint (resolved base URL),
  the model and the sampling parameters; reply caches key on it.

Messages are provider-neutral dicts: ``{"role": "system" | "user", "content": str}``,
``{"role": "assistant", "content": str, "tool_calls": [{"id", "name", "arguments"}]}`` (tool
calls optional; ``"thinking"``: Anthropic's thinking blocks, sent back to Anthropic only) and
``{"role": "tool", "tool_call_id": str, "content": str}``.

A custom client can take part in all of this by offering the same methods: ``chat(messages,
tools=None, tool_choice="auto") -> ChatReply``, ``cache_identity() -> dict`` (with ``"model"``)
and ``supports_tools``.
"""

from __future__ import annotations

import contextlib
import email.utils
import importlib
import ipaddress
import json
import math
import numbers
import os
import random
import re
import socket
import threading
import time
import traceback
import urllib.parse
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..engine.concurrency import pause, request_slot, when_stopped
from ..shared.checks import is_positive, is_whole, whole_number
from ..shared.exceptions import ConfigurationError, RestrictivenessError
from ..shared.forksafe import ForkSafeLock

__all__ = ["ChatAdapter", "OpenAIChat", "AnthropicChat", "ChatReply", "ToolCall", "Tool",
           "ClientError", "call_client", "backoff_delay", "retry_after_seconds",
           "RETRY_AFTER_MAX", "CallBudget", "BudgetExhausted", "estimate_tokens"]

#: Base URLs used when none is given (and none is set in the SDK's environment variable).
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1",
                     "anthropic": "https://api.anthropic.com"}

#: The environment variables the adapters read the API key from by default.
DEFAULT_KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

#: HTTP statuses retried besides 5xx: request timeout, conflict (lock contention), rate limit.
RETRY_STATUSES = frozenset({408, 409, 429})

#: Largest reply body read, in bytes, as received and once decoded (gzip, deflate): a reply of
#: 32,000 tokens is about 130 kB, so a larger body is a broken or hostile endpoint, and reading
#: it whole could exhaust memory.
MAX_REPLY_BYTES = 64 * 2**20

#: Longest wait, in seconds, a ``Retry-After`` header can impose before one retry (a server
#: asking for days, or a date years ahead, must not hang a study).
RETRY_AFTER_MAX = 300.0


class ClientError(RestrictivenessError, RuntimeError):
    """A language-model call failed (after its retries, if the error was retryable).

    In a study the fit fails with reason ``"client"`` and the baseline's predictions are used;
    the message says what the endpoint answered. Check the endpoint, the model name and the
    API key, or raise ``max_retries`` / ``timeout`` for a busy endpoint.

    Parameters
    ----------
    message : str
        What failed and what the endpoint answered.
    retries : int
        Retries made before giving up.
    status : int, optional
        The last HTTP status, if the endpoint answered.
    sent : bool
        Whether any request was made (False: refused before sending, e.g. no API key).

    Attributes
    ----------
    retries : int
        Retries made before giving up.
    status : int or None
        The last HTTP status, if the endpoint answered.
    sent : bool
        Whether any request was made; a fit's usage counts the call only then.

    Examples
    --------
    A plain callable client that raises is reported as a ClientError:

    >>> def unreachable(messages):
    ...     raise TimeoutError("no answer in 120 s")
    >>> call_client(unreachable, [{"role": "user", "content": "Hi"}])
    Traceback (most recent call last):
    ...
    restrictiveness.ai.clients.ClientError: the client raised TimeoutError: no answer in 120 s
    >>> ClientError("HTTP 429 after 6 retries", retries=6, status=429).status
    429
    """

    def __init__(self, message: str, retries: int = 0, status: int | None = None,
                 sent: bool = True) -> None:
        super().__init__(message)
        self.retries, self.status, self.sent = retries, status, sent


#: Lone UTF-16 surrogates: JSON admits them ("\udcff"), but no file, hash or netCDF can encode
#: them as UTF-8, so replies replace them with U+FFFD once, when they arrive.
_SURROGATE = re.compile("[\ud800-\udfff]")

#: Characters no HTTP header value may hold (tab aside): an API key with one cannot be sent.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f]")


@dataclass(frozen=True)
class ToolCall:
    """One tool call requested by the model: its id, the tool's name and its arguments.

    Parameters
    ----------
    id : str or None
        The call's id, which the tool's result message quotes (``tool_call_id``); None when
        the endpoint gave none.
    name : str or None
        The tool called (None when the endpoint named none).
    arguments : dict
        The arguments, decoded from the model's JSON.

    Examples
    --------
    >>> call = ToolCall("call_1", "run_python", {"code": "print(1)"})
    >>> call.to_json()
    {'id': 'call_1', 'name': 'run_python', 'arguments': {'code': 'print(1)'}}
    """

    id: str | None
    name: str | None
    arguments: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        text = json.dumps(self.arguments, ensure_ascii=False, default=str)
        for name, value in (("id", self.id), ("name", self.name)):
            if isinstance(value, str):
                object.__setattr__(self, name, _SURROGATE.sub("\ufffd", value))
        if _SURROGATE.search(text):
            object.__setattr__(self, "arguments", json.loads(_SURROGATE.sub("\ufffd", text)))

    def to_json(self) -> dict:
        """The call as a provider-neutral dict (the ``tool_calls`` entry of a message).

        Returns
        -------
        dict
            ``{"id", "name", "arguments"}``.

        Examples
        --------
        >>> ToolCall("call_1", "stop").to_json()
        {'id': 'call_1', 'name': 'stop', 'arguments': {}}
        """
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Tool:
    """A function tool offered to the model: name, description and JSON-schema parameters.

    Parameters
    ----------
    name : str
        The name the model calls the tool by.
    description : str
        What the tool does, for the model.
    parameters : dict
        A JSON schema of the tool's arguments.

    Examples
    --------
    >>> tool = Tool("run_python", "Run Python code and return its output.",
    ...             {"type": "object", "properties": {"code": {"type": "string"}},
    ...              "required": ["code"]})
    >>> sorted(tool.to_json())
    ['description', 'name', 'parameters']
    """

    name: str
    description: str
    parameters: dict

    def to_json(self) -> dict:
        """The tool as a provider-neutral dict (the adapters map it to each API's format).

        Returns
        -------
        dict
            ``{"name", "description", "parameters"}``.

        Examples
        --------
        >>> Tool("stop", "End the session.", {"type": "object"}).to_json()["name"]
        'stop'
        """
        return {"name": self.name, "description": self.description,
                "parameters": self.parameters}


#: More tokens than one reply can report truthfully (the largest context windows hold about
#: 10**7): a larger count is a broken reply, not usage.
_MAX_REPLY_TOKENS = 10**9


def _token_count(value, what: str) -> int | None:
    """A reported token count as an int; None when none was reported.

    Parameters
    ----------
    value : object
        The count as reported.
    what : str
        Its name, for the error.

    Returns
    -------
    int or None

    Raises
    ------
    ValueError
        ``value`` is not a whole number from 0 to ``_MAX_REPLY_TOKENS`` (negative, NaN,
        1e30, text, a bool): summed into usage and priced, it would be a wrong total.

    Examples
    --------
    >>> _token_count(12.0, "output_tokens"), _token_count(None, "output_tokens")
    (12, None)
    >>> _token_count(-5, "output_tokens")
    Traceback (most recent call last):
    ...
    ValueError: output_tokens is -5, not a token count (a whole number from 0 to 1,000,000,000)
    """
    if value is None:
        return None
    if not (is_whole(value) and 0 <= value <= _MAX_REPLY_TOKENS):
        raise ValueError(f"{what} is {value!r}, not a token count (a whole number from 0 to "
                         f"{_MAX_REPLY_TOKENS:,})")
    return int(value)


@dataclass
class ChatReply:
    """A model's reply and what the call cost.

    Parameters
    ----------
    text : str
        The reply text (text blocks joined).
    tool_calls : tuple of ToolCall
        Tool calls the model requested (native tool protocol only).
    input_tokens, output_tokens : int, optional
        Token counts reported by the endpoint (None when it reports none); anything else than
        a whole number from 0 to 10**9 is refused (``ValueError``).
    seconds : float
        Wall time of the call, retries and waits included.
    retries : int
        Retries the call needed.
    stop_reason : str, optional
        Why the model stopped ("stop", "length", "tool_calls", "end_turn", "max_tokens", ...).
    thinking : tuple of dict
        Anthropic's thinking blocks as received (signatures included): with thinking on, the
        API requires them back before the reply's tool calls in the next request.

    Examples
    --------
    >>> r = ChatReply("hi", input_tokens=3, output_tokens=1)
    >>> r.message()
    {'role': 'assistant', 'content': 'hi'}
    >>> ChatReply.from_json(r.to_json()) == r
    True
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    seconds: float = 0.0
    retries: int = 0
    stop_reason: str | None = None
    thinking: tuple[dict, ...] = ()

    def __post_init__(self) -> None:
        self.text = _SURROGATE.sub("\ufffd", self.text)  # (see _SURROGATE)
        # counts are summed into a fit's usage and priced: 1e30 or -5 there is a lie
        self.input_tokens = _token_count(self.input_tokens, "input_tokens")
        self.output_tokens = _token_count(self.output_tokens, "output_tokens")

    def message(self) -> dict:
        """The reply as a provider-neutral assistant message.

        Returns
        -------
        dict
            ``{"role": "assistant", "content": text}``, with ``"tool_calls"`` when the model
            requested any and ``"thinking"`` when it sent thinking blocks.

        Examples
        --------
        >>> msg = ChatReply("", (ToolCall("c1", "stop"),)).message()
        >>> msg["role"], msg["tool_calls"]
        ('assistant', [{'id': 'c1', 'name': 'stop', 'arguments': {}}])
        """
        msg: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.thinking:
            msg["thinking"] = [dict(b) for b in self.thinking]
        return msg

    def to_json(self) -> dict:
        """The reply as a JSON-serialisable dict (how reply caches store it).

        Returns
        -------
        dict
            Every field; tool calls as :meth:`ToolCall.to_json` dicts.

        Examples
        --------
        >>> ChatReply("hi", input_tokens=3).to_json()["input_tokens"]
        3
        """
        return {"text": self.text, "tool_calls": [c.to_json() for c in self.tool_calls],
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "seconds": self.seconds, "retries": self.retries,
                "stop_reason": self.stop_reason, "thinking": [dict(b) for b in self.thinking]}

    @classmethod
    def from_json(cls, data: Mapping) -> ChatReply:
        """The reply stored by :meth:`to_json`.

        Parameters
        ----------
        data : mapping
            A dict from :meth:`to_json` (absent counts read as None, absent timings as 0).

        Returns
        -------
        ChatReply

        Examples
        --------
        >>> r = ChatReply.from_json({"text": "hi", "tool_calls": [{"id": "c1", "name": "stop"}]})
        >>> r.tool_calls, r.input_tokens, r.seconds
        ((ToolCall(id='c1', name='stop', arguments={}),), None, 0.0)
        """
        # an id (or name) the endpoint left out stays None: read as "None" it changed the
        # conversation's next request, whose key then missed the cache (a cached rerun of an
        # agent asked a server that gives tool calls no ids again)
        calls = tuple(ToolCall(_text_or_none(c["id"]), _text_or_none(c["name"]),
                               dict(c.get("arguments") or {}))
                      for c in data.get("tool_calls") or ())
        return cls(str(data["text"]), calls, data.get("input_tokens"),
                   data.get("output_tokens"), float(data.get("seconds") or 0.0),
                   int(data.get("retries") or 0), data.get("stop_reason"),
                   tuple(dict(b) for b in data.get("thinking") or ()))


def _text_or_none(value) -> str | None:
    return None if value is None else str(value)


def backoff_delay(retry: int, base: float, cap: float, rng: random.Random) -> float:
    """Seconds to wait before retry number ``retry`` (0-based): exponential backoff with
    "equal jitter" — half of ``min(cap, base * 2**retry)`` fixed, the other half uniform — so
    clients that failed together do not retry together, yet every wait grows.

    Examples
    --------
    >>> rng = random.Random(0)
    >>> [round(backoff_delay(r, 1.0, 8.0, rng), 2) for r in range(5)]
    [0.92, 1.76, 2.84, 5.04, 6.05]
    """
    d = min(cap, base * 2.0 ** retry)
    return d / 2 + rng.uniform(0, d / 2)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, or ``Retry-After`` in seconds or as an
    HTTP date, at most :data:`RETRY_AFTER_MAX`; a date already past is 0; None when absent,
    unreadable or negative (the caller's backoff applies).

    Examples
    --------
    >>> retry_after_seconds({"retry-after": "2"}), retry_after_seconds({"retry-after-ms": "250"})
    (2.0, 0.25)
    >>> retry_after_seconds({"retry-after": "1e9"}), retry_after_seconds({"retry-after": "-5"})
    (300.0, None)
    >>> retry_after_seconds({}) is None
    True
    """
    if not headers:
        return None
    low = {str(k).lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = low.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            try:
                date = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                continue
            seconds = max(0.0, date.timestamp() - time.time())
        if seconds >= 0:  # not NaN, not negative
            return min(seconds, RETRY_AFTER_MAX)
    return None


class ReplyTooLarge(RuntimeError):
    """An endpoint's reply body exceeded :data:`MAX_REPLY_BYTES`, as received or once decoded,
    or came in a content encoding that cannot be decoded within it (the call is not retried)."""


_TOKEN_PIECES = re.compile(r"\d{1,3}|[A-Za-z]+|[^\sA-Za-z\d]")


def estimate_tokens(text: str) -> int:
    """Approximate tokens of ``text`` for current BPE tokenizers: a word, a run of up to three
    digits, or a punctuation mark each count one (numbers dominate a CSV prompt, and they
    tokenize about three digits at a time).

    Examples
    --------
    >>> estimate_tokens("z_hi,z_lo,p\\n83.59103725,0,0.5")
    20
    """
    return len(_TOKEN_PIECES.findall(text))


def _spent_tokens(reply: ChatReply, messages: Sequence[Mapping]) -> int:
    """Tokens a reply cost: the endpoint's counts, or estimates (:func:`estimate_tokens`) for
    the counts it does not report, so that a budget is never blind to a reply."""
    sent = reply.input_tokens if reply.input_tokens is not None else estimate_tokens(
        json.dumps(list(messages), ensure_ascii=False, default=str))
    made = reply.output_tokens if reply.output_tokens is not None else estimate_tokens(
        json.dumps(reply.message(), ensure_ascii=False))
    return sent + made


class BudgetExhausted(ClientError):
    """A client's :class:`CallBudget` is used up: the request was refused, not sent.

    A :class:`ClientError`, so in a study the fit fails with reason ``"client"`` and this
    message (the failure shows in the run's summary); it is never retried.

    Parameters
    ----------
    message : str
        Which budget and how much of it was used.
    retries : int
        Retries the call had made before its next request was refused.
    status : int, optional
        Always None: the refused request was not sent.
    sent : bool
        As for :class:`ClientError`; a fit's usage counts the call when it had sent requests
        before the refused one (``retries > 0``).

    Examples
    --------
    >>> budget = CallBudget(max_requests=0)
    >>> budget.acquire()
    Traceback (most recent call last):
    ...
    restrictiveness.ai.clients.BudgetExhausted: call budget used up: 0 of 0 requests sent
    """


class CallBudget:
    """An enforced limit on what clients may spend: requests sent and tokens used.

    Give one to an adapter (``OpenAIChat(..., budget=b)``); share one object between adapters
    for a limit over all of them. Every HTTP request the adapter would send — retries included,
    since a failed or timed-out request may be billed — first takes one request from the
    budget; once ``max_requests`` are taken, or the tokens used reach ``max_tokens``, requests
    are refused with :class:`BudgetExhausted` (not retried). Tokens are the input and output
    counts the endpoint reports, or estimates (:func:`estimate_tokens`) where it reports none;
    they are known only once a reply arrives, so the request that crosses ``max_tokens`` is
    completed (and requests in flight on other threads: at most one reply per thread).

    Replies read from a :class:`~restrictiveness.ai.llm.ResponseCache` cost nothing: the
    adapter is not called. The counts live in this object (thread-safe) and start at zero in
    each session: a budget does not pickle, so adapters carrying one are fitted on threads
    (``Study.run(..., concurrency=N)``, beside any ``n_jobs``), not shipped to worker processes,
    where each copy would count apart (such a run is refused before any work).

    Parameters
    ----------
    max_requests : int, optional
        Most HTTP requests sent (None: no limit).
    max_tokens : int, optional
        Most input plus output tokens used (None: no limit).

    Attributes
    ----------
    requests : int
        Requests taken so far.
    tokens : int
        Tokens used so far.

    Examples
    --------
    >>> budget = CallBudget(max_requests=2, max_tokens=1000)
    >>> budget.acquire(); budget.charge(600)
    >>> budget.acquire(); budget.charge(500)      # the reply in flight completes
    >>> budget.requests, budget.tokens
    (2, 1100)
    >>> budget.acquire()
    Traceback (most recent call last):
    ...
    restrictiveness.ai.clients.BudgetExhausted: call budget used up: 2 of 2 requests sent
    """

    def __init__(self, max_requests: int | None = None, max_tokens: int | None = None) -> None:
        self.max_requests, self.max_tokens = (
            None if value is None else whole_number(value, f"CallBudget: {name}", minimum=0)
            for name, value in (("max_requests", max_requests), ("max_tokens", max_tokens)))
        self.requests = self.tokens = 0
        self._lock = ForkSafeLock()
        # a forked copy (Study.run(fit_timeout=...) fits in a child process) would count apart
        # and its counts would never come back: it refuses, as a pickled copy does
        self._pid = os.getpid()

    def acquire(self) -> None:
        """Take one request, or raise :class:`BudgetExhausted` (nothing taken) if none is left.

        Examples
        --------
        >>> budget = CallBudget(max_requests=1)
        >>> budget.acquire(); budget.requests
        1
        """
        if os.getpid() != self._pid:
            raise ConfigurationError(
                "a CallBudget counts in the process that made it, and this request comes from "
                "another (e.g. a fit under Study.run(fit_timeout=...), which runs in a forked "
                "child); fit language-model procedures without fit_timeout, on threads "
                "(concurrency=N), to enforce the budget")
        with self._lock:
            if self.max_requests is not None and self.requests >= self.max_requests:
                raise BudgetExhausted(f"call budget used up: {self.requests} of "
                                      f"{self.max_requests} requests sent")
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                raise BudgetExhausted(f"call budget used up: {self.tokens} tokens used, the "
                                      f"limit is {self.max_tokens}")
            self.requests += 1

    def charge(self, tokens: int) -> None:
        """Add the tokens a reply used.

        Parameters
        ----------
        tokens : int
            Input plus output tokens of the reply.

        Examples
        --------
        >>> budget = CallBudget(max_tokens=10)
        >>> budget.charge(4); budget.tokens
        4
        """
        with self._lock:
            self.tokens += int(tokens)

    def __getstate__(self):
        raise TypeError("a CallBudget counts in one process and cannot be copied to another "
                        "(each copy would count apart); fit language-model procedures on "
                        "threads in this process (Study.run(..., concurrency=N))")

    def __repr__(self) -> str:
        return (f"CallBudget(max_requests={self.max_requests}, max_tokens={self.max_tokens}; "
                f"used {self.requests} requests, {self.tokens} tokens)")


#: The HTTP attempt running on each thread (see :class:`_Attempt`); the SDKs send a request and
#: read its reply on the calling thread, and our network streams find its deadline here.
_ATTEMPT = threading.local()


def _shutdown(sock) -> None:
    """Shut a socket down for both directions, which wakes a thread blocked on it. The plain
    socket's method, also for a TLS socket (whose own ``shutdown`` drops its TLS state under
    the feet of a thread still reading it)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, TypeError):  # already closed, or not a socket
        pass


class _Attempt:
    """The deadline of one HTTP attempt: connect, TLS, request, status line, headers and body.

    Every socket operation of the attempt waits at most the time left (a timeout the kernel
    enforces on each connect, send and receive), and a watchdog shuts the attempt's sockets
    down at the deadline, which wakes any send or receive still blocked (a peer that takes or
    gives one byte just before each per-operation timeout would otherwise stretch the attempt
    without end).
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.expired = False
        self._done = False
        self._sockets: list = []
        self._lock = ForkSafeLock()
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()
        # a stopped run (Ctrl-C, an error) ends the attempt at once: its thread, blocked in a
        # receive, held the interpreter's exit until the reply or the timeout (up to 600 s)
        self._unhook = when_stopped(self._expire)

    def left(self, error: type[Exception]) -> float:
        """Seconds left, or ``error`` when none are."""
        left = self.deadline - time.monotonic()
        if left <= 0 or self.expired:
            raise error(f"timed out: the attempt took over {self.timeout:g} s")
        return left

    def watch(self, sock) -> None:
        """Shut ``sock`` down at the deadline (at once if it is past)."""
        with self._lock:
            if sock is None or self._done:
                return
            if self.expired:
                _shutdown(sock)
            elif all(s is not sock for s in self._sockets):
                self._sockets.append(sock)

    def _expire(self) -> None:
        # under the lock: once finish() returns, no socket of a later attempt is touched
        with self._lock:
            if not self._done:
                self.expired = True
                for sock in self._sockets:
                    _shutdown(sock)

    def finish(self) -> None:
        """The attempt is over: stop the watchdog and forget the sockets (kept in the pool)."""
        with self._lock:
            self._done = True
            self._sockets.clear()
        self._timer.cancel()
        self._unhook()
        if getattr(_ATTEMPT, "current", None) is self:
            _ATTEMPT.current = None


def _lookup(host: str, port: int, timeout: float | None) -> list[str]:
    """The addresses of ``host`` (an IP literal is its own), looked up within ``timeout`` seconds.

    The C resolver cannot be interrupted and has its own, much longer timeouts (seconds per
    server and try), so the lookup runs on a daemon thread that is abandoned at the deadline.
    Raises ``TimeoutError`` when the time runs out and ``OSError`` when the lookup fails.

    Examples
    --------
    >>> _lookup("127.0.0.1", 80, 1.0)
    ['127.0.0.1']
    """
    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    found: dict[str, Any] = {}
    done = threading.Event()

    def look() -> None:
        try:
            found["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            found["error"] = exc
        done.set()

    threading.Thread(target=look, name=f"rx-lookup-{host}", daemon=True).start()
    if not done.wait(timeout):
        raise TimeoutError(f"timed out: looking up {host!r} took over {timeout:g} s")
    if "error" in found:
        raise found["error"]
    return list(dict.fromkeys(str(info[4][0]) for info in found["infos"]))


def _deadline_backend(httpcore):
    """An httpcore network backend whose streams obey the calling thread's :class:`_Attempt`
    (the system's, unchanged, outside an attempt)."""

    def wait(timeout: float | None, error, sock=None) -> float | None:
        attempt = getattr(_ATTEMPT, "current", None)
        if attempt is None:
            return timeout
        attempt.watch(sock)
        left = attempt.left(error)
        return left if timeout is None else min(timeout, left)

    class Stream(httpcore.NetworkStream):
        def __init__(self, inner) -> None:
            self.inner = inner

        def _wait(self, timeout: float | None, error) -> float | None:
            return wait(timeout, error, self.inner.get_extra_info("socket"))

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self.inner.read(max_bytes, self._wait(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self.inner.write(buffer, self._wait(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self.inner.close()

        def start_tls(self, ssl_context, server_hostname: str | None = None,
                      timeout: float | None = None):
            return Stream(self.inner.start_tls(ssl_context, server_hostname,
                                               self._wait(timeout, httpcore.ConnectTimeout)))

        def get_extra_info(self, info: str):
            return self.inner.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self.inner = httpcore.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                        local_address: str | None = None, socket_options=None):
            try:
                addresses = _lookup(host, port, wait(timeout, httpcore.ConnectTimeout))
            except TimeoutError as exc:
                raise httpcore.ConnectTimeout(str(exc)) from None
            except OSError as exc:     # as httpcore maps a failed lookup of its own
                raise httpcore.ConnectError(str(exc)) from exc

            def connect(address: str):
                return Stream(self.inner.connect_tcp(
                    address, port, wait(timeout, httpcore.ConnectTimeout), local_address,
                    socket_options))

            # the addresses in the resolver's order until one connects, as
            # socket.create_connection does, all within the attempt's time
            *others, last = addresses
            for address in others:
                try:
                    return connect(address)
                except httpcore.ConnectError:
                    continue
            return connect(last)

        def connect_unix_socket(self, path: str, timeout: float | None = None,
                                socket_options=None):
            return Stream(self.inner.connect_unix_socket(
                path, wait(timeout, httpcore.ConnectTimeout), socket_options))

        def sleep(self, seconds: float) -> None:
            self.inner.sleep(seconds)

    return Backend()


#: Content encodings the adapters accept (and ask for): those they can decode in bounded
#: pieces, each counted against :data:`MAX_REPLY_BYTES`.
ACCEPTED_ENCODINGS = ("gzip", "deflate")

#: Most bytes one step of decompression produces (memory stays near this, not the reply's).
_PIECE = 2**16


def _inflate(chunks: Iterable[bytes], encoding: str) -> Iterator[bytes]:
    """Decode a gzip or deflate stream in pieces of at most :data:`_PIECE` bytes, however much
    one compressed chunk expands (a kilobyte of zeros compressed expands a thousandfold).

    ``deflate`` is zlib-wrapped by the standard and raw from some servers; both are read. Data
    after the end of the compressed stream are ignored, as browsers and httpx do.
    """
    # deflate: the two-byte zlib header decides; until both are in, a raw stream is possible
    head: bytes | None = b"" if encoding == "deflate" else None
    d = zlib.decompressobj(zlib.MAX_WBITS | 16 if encoding == "gzip" else zlib.MAX_WBITS)
    for chunk in chunks:
        if d.eof:  # trailing data: still read (and counted), not decoded
            continue
        try:
            piece = d.decompress(chunk, _PIECE)
        except zlib.error:
            if head is None:
                raise
            d = zlib.decompressobj(-zlib.MAX_WBITS)  # a raw deflate stream
            piece = d.decompress(head + chunk, _PIECE)
            head = None
        if head is not None:
            head += chunk
            head = head if len(head) < 2 else None
        while piece:  # input left over, or output pending: drain a piece at a time
            yield piece
            piece = d.decompress(d.unconsumed_tail, _PIECE)
    tail = d.flush()
    if tail:
        yield tail


def _bounded_http_client(module, timeout: float):
    """The SDK's default HTTP client, with every attempt (connect, request, headers, body)
    bounded by ``timeout`` seconds in all (:class:`_Attempt`; the SDK's own timeout bounds each
    network read only, so a server trickling a byte at a time would hold a call, and a study,
    for ever) and every reply cut off at :data:`MAX_REPLY_BYTES`, also through the proxies
    named by the environment (``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, ...)."""
    import httpcore2 as httpcore  # the SDKs' HTTP libraries, present whenever they are
    import httpx2 as httpx

    def timed_out(attempt: _Attempt, request, exc: Exception) -> Exception:
        # a socket the watchdog shut down fails however it fails (a read of nothing, a
        # broken pipe): the cause is the deadline, and the SDKs retry timeouts
        if attempt.expired or isinstance(exc, httpx.TimeoutException):
            return httpx.ReadTimeout(f"timed out: the attempt took over {timeout:g} s",
                                     request=request)
        return exc

    class Stream(httpx.SyncByteStream):
        """The reply body, decoded here (its content encodings in the order applied), each
        byte read and each byte decoded counted against the cap and the deadline."""

        def __init__(self, inner, attempt: _Attempt, request, encodings: list[str]) -> None:
            self.inner, self.attempt, self.request = inner, attempt, request
            self.encodings = encodings

        def _counted(self, chunks: Iterable[bytes], what: str) -> Iterator[bytes]:
            size = 0
            for chunk in chunks:
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise ReplyTooLarge(f"the reply exceeds {MAX_REPLY_BYTES} bytes{what}")
                self.attempt.left(httpx.ReadTimeout)
                yield chunk

        def __iter__(self):
            try:
                chunks = self._counted(self.inner, "")
                for encoding in reversed(self.encodings):
                    chunks = self._counted(_inflate(chunks, encoding),
                                           f" once decoded ({encoding})")
                yield from chunks
            except zlib.error as exc:
                raise httpx.DecodingError(f"the reply is not valid {', '.join(self.encodings)}: "
                                          f"{exc}",
                                          request=self.request) from exc
            except (httpx.TransportError, OSError) as exc:
                raise timed_out(self.attempt, self.request, exc) from exc

        def close(self) -> None:
            try:
                self.inner.close()
            finally:
                self.attempt.finish()

    class Transport(httpx.HTTPTransport):
        def __init__(self, proxy: str | None = None) -> None:
            # httpx takes the pool's limits from the transport it is given, not the client:
            # the SDK's (1,000 connections, 100 kept alive), not httpx's 100 and 20
            super().__init__(proxy=proxy, limits=module.DEFAULT_CONNECTION_LIMITS)
            if not hasattr(self._pool, "_network_backend"):  # an HTTP library we do not know
                raise ConfigurationError("the installed httpx2/httpcore2 cannot bound the time "
                                         "of a request; install the versions the SDKs pin")
            self._pool._network_backend = _deadline_backend(httpcore)

        def handle_request(self, request):
            # only encodings we decode within the cap (httpx would also take br and zstd)
            request.headers["Accept-Encoding"] = ", ".join(ACCEPTED_ENCODINGS)
            attempt = _ATTEMPT.current = _Attempt(timeout)
            try:
                response = super().handle_request(request)
                encodings = [e.strip().lower() for e in response.headers.get_list(
                    "content-encoding", split_commas=True) if e.strip().lower() != "identity"]
                refused = [e for e in encodings if e not in ACCEPTED_ENCODINGS]
                if refused:
                    response.close()
                    raise ReplyTooLarge(f"the reply is encoded as {', '.join(refused)}, which "
                                        "cannot be decoded within a size bound (the request "
                                        f"accepts {', '.join(ACCEPTED_ENCODINGS)})")
            except Exception as exc:
                attempt.finish()
                error = timed_out(attempt, request, exc)
                if error is exc:
                    raise
                raise error from exc
            # decoded by Stream, under the cap: httpx must not decode again (unbounded in all)
            for name in ("content-encoding", "content-length"):
                response.headers.pop(name, None)
            response.stream = Stream(response.stream, attempt, request, encodings)
            return response

    # httpx ignores the proxy environment variables once given a transport: route them, as
    # it would, through bounded transports (None: no proxy for that pattern, from NO_PROXY)
    from httpx2._utils import get_environment_proxies
    mounts = {pattern: None if url is None else Transport(url)
              for pattern, url in get_environment_proxies().items()}
    # redirects are not followed: a 301/302 resends the request as a GET without its messages
    # (the answer to a question never asked), and any redirect to another host sends the
    # prompt there; the 3xx status becomes a ClientError naming where it points
    return module.DefaultHttpxClient(transport=Transport(), mounts=mounts,
                                     follow_redirects=False)


#: Request fields the adapters set themselves, which ``extra_body`` may not override.
RESERVED_BODY = ("model", "messages", "system", "temperature", "max_tokens", "tools",
                 "tool_choice", "stream")
RESERVED_BODY_HINT = ("give the model as the first argument and use temperature= and "
                      "max_tokens=; replies are read whole, not streamed")


class ChatAdapter:
    """Shared machinery of the SDK adapters: configuration, lazy SDK client, retries.

    Subclasses set ``provider``, ``sdk`` (the module name) and ``sdk_client`` (its client
    class) and implement ``_request`` and ``_parse``; each documents its defaults.

    Parameters
    ----------
    model : str
        Model id.
    base_url : str or None
        Endpoint (None: the SDK's ``<PROVIDER>_BASE_URL`` variable, else the provider's),
        without credentials (``user:password@`` is refused: the address is shown and stored),
        query or fragment (the API's path is appended to it).
    api_key : str or None
        None reads the environment variable ``api_key_env``.
    api_key_env : str
        Where the key is read (in each process that calls the model).
    temperature : float or None
        Sampling temperature in [0, 2] (None: the endpoint's); [0, 1] for Anthropic.
    max_tokens : int or None
        Output-token limit per reply.
    timeout : float
        Seconds per HTTP attempt in all, from connecting to the reply's last byte.
    max_retries : int
        Retries of a failed request (see the module docstring for which errors).
    extra_body : dict or None
        Extra JSON request fields, sent with every request (they key the cache too); not the
        fields the adapter sets itself (:data:`RESERVED_BODY`: model, messages, sampling,
        tools, streaming).
    backoff, backoff_max : float
        First retry wait and its cap, in seconds.
    budget : CallBudget, optional
        An enforced limit on requests and tokens (shared by the adapters given the same one).

    Examples
    --------
    An adapter holds configuration only, so it pickles (to worker processes) and never shows
    its key:

    >>> import pickle
    >>> llm = OpenAIChat("gpt-4o", base_url="https://api.openai.com/v1", api_key="sk-secret",
    ...                  temperature=0.0)
    >>> isinstance(llm, ChatAdapter), llm
    (True, OpenAIChat('gpt-4o', base_url='https://api.openai.com/v1', temperature=0.0))
    >>> pickle.loads(pickle.dumps(llm)).cache_identity() == llm.cache_identity()
    True
    """

    provider: str = ""
    sdk: str = ""
    sdk_client: str = ""
    #: The endpoint's own tool protocol is available (the Agent uses it when asked "auto").
    supports_tools: bool = True

    def __init__(self, model: str, base_url: str | None, api_key: str | None,
                 api_key_env: str, temperature: float | None, max_tokens: int | None,
                 timeout: float, max_retries: int, extra_body: Mapping | None,
                 backoff: float, backoff_max: float, budget: CallBudget | None = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"{type(self).__name__}: model must be a nonempty model "
                                     f"id string, got {model!r}")
        if base_url is not None and not str(base_url).startswith(("http://", "https://")):
            raise ConfigurationError(f"{type(self).__name__}: base_url must start with "
                                     f"http:// or https://, got {base_url!r}")
        # True was sent as temperature 1.0, "0.5" as 0.5, "hot" raised a bare ValueError
        if temperature is not None and not (_is_real(temperature) and 0 <= temperature <= 2):
            raise ConfigurationError(f"{type(self).__name__}: temperature must be a number in "
                                     f"[0, 2], got {temperature!r}")
        who = type(self).__name__
        # 100.5 tokens or 2.5 retries were truncated silently, True passed as 1
        if max_tokens is not None:
            max_tokens = whole_number(max_tokens, f"{who}: max_tokens", minimum=1)
        max_retries = whole_number(max_retries, f"{who}: max_retries", minimum=0)
        if not is_positive(timeout):  # an infinite timeout hangs on a dead server
            raise ConfigurationError(f"{who}: timeout must be positive, finite seconds, got "
                                     f"{timeout!r}")
        if api_key is not None and not isinstance(api_key, str):
            # (a key read as bytes from a file): every call failed with a bare TypeError from
            # the header check; the value is not quoted, being a secret
            raise ConfigurationError(f"{who}: api_key must be a string (or None: read the "
                                     f"environment variable), got {type(api_key).__name__}")
        if not isinstance(api_key_env, str) or not api_key_env:
            raise ConfigurationError(f"{who}: api_key_env must name an environment variable, "
                                     f"got {api_key_env!r}")
        # an infinite wait made time.sleep raise (or a study wait for ever) between retries
        if not (_is_real(backoff) and _is_real(backoff_max)
                and 0 <= backoff <= backoff_max < math.inf):
            raise ConfigurationError(f"{who}: need 0 <= backoff <= backoff_max, finite seconds; "
                                     f"got backoff={backoff!r}, backoff_max={backoff_max!r}")
        try:
            json.dumps(dict(extra_body or {}), sort_keys=True)
        except (TypeError, ValueError):
            raise ConfigurationError(f"{type(self).__name__}: extra_body must be JSON "
                                     "(it is sent with every request and keys the cache)"
                                     ) from None
        # the request's own fields: extra_body overrode them silently, so the endpoint served
        # another model (or sampling) than the one recorded, priced and named in the cache
        clash = sorted(set(dict(extra_body or {})) & set(RESERVED_BODY))
        if clash:
            raise ConfigurationError(f"{who}: extra_body must not set {clash}: the adapter "
                                     f"sends them ({RESERVED_BODY_HINT})")
        env_url = os.environ.get(f"{self.provider.upper()}_BASE_URL")
        # resolved once, here: the cache identity must name the endpoint actually called,
        # whatever the environment of a worker process says
        self.base_url = str(base_url or env_url or DEFAULT_BASE_URLS[self.provider]).rstrip("/")
        if "@" in urllib.parse.urlsplit(self.base_url).netloc:
            # user:password@ would be shown by repr and stored in results, checkpoints and
            # reply caches with the endpoint's address (not quoted here for the same reason)
            origin = "base_url" if base_url else f"{self.provider.upper()}_BASE_URL"
            raise ConfigurationError(f"{who}: {origin} must not carry credentials "
                                     "(user:password@host); pass the key as api_key= or in "
                                     "the environment variable api_key_env")
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.query or parts.fragment or self.base_url.endswith(("?", "#")):
            # the SDK appends the API's path to the whole address, so the request went to
            # '/v1/' with the query 'key=...chat/completions' (a 404, or a wrong answer from a
            # server that ignores the query), and a key in the query was shown and stored
            # with the address (not quoted here for that reason)
            origin = "base_url" if base_url else f"{self.provider.upper()}_BASE_URL"
            raise ConfigurationError(f"{who}: {origin} must be the endpoint's address without "
                                     "a query (?...) or fragment (#...): the API's path is "
                                     "appended to it; pass a key as api_key= or in the "
                                     "environment variable api_key_env")
        self.model, self.api_key, self.api_key_env = model, api_key, api_key_env
        self.temperature = None if temperature is None else float(temperature)
        self.max_tokens = max_tokens
        self.timeout, self.max_retries = float(timeout), max_retries
        self.extra_body = dict(extra_body) if extra_body else None
        self.backoff, self.backoff_max = float(backoff), float(backoff_max)
        if budget is not None and not isinstance(budget, CallBudget):
            raise ConfigurationError(f"{type(self).__name__}: budget must be a CallBudget, got "
                                     f"{type(budget).__name__}")
        self.budget = budget
        self._client = None
        self._lock = ForkSafeLock()
        # Imported here, in the caller's thread, not at the first request on a run's I/O
        # thread: a process-pool worker forked while that thread held a module's import lock
        # waited for it for ever at its own first request. (A missing SDK is reported then.)
        for name in filter(None, (self.sdk, "httpcore2", "httpx2")):
            with contextlib.suppress(ImportError):
                importlib.import_module(name)

    # -- pickling: configuration only; the SDK client is rebuilt where it is used ----------
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_client"], state["_lock"] = None, None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = ForkSafeLock()

    def __repr__(self) -> str:
        parts = [f"{self.model!r}", f"base_url={self.base_url!r}"]
        for name in ("temperature", "max_tokens", "extra_body"):
            if getattr(self, name) is not None:
                parts.append(f"{name}={getattr(self, name)!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def cache_identity(self) -> dict:
        """What determines a reply besides the messages: provider, endpoint, model, sampling.

        Returns
        -------
        dict
            ``provider``, ``base_url``, ``model``, ``temperature``, ``max_tokens`` and
            ``extra_body``; reply caches key on it.

        Examples
        --------
        >>> ident = AnthropicChat("claude-sonnet-4-5", max_tokens=8000).cache_identity()
        >>> ident["provider"], ident["model"], ident["max_tokens"]
        ('anthropic', 'claude-sonnet-4-5', 8000)
        """
        return {"provider": self.provider, "base_url": self.base_url, "model": self.model,
                "temperature": self.temperature, "max_tokens": self.max_tokens,
                "extra_body": self.extra_body}

    # -- the SDK client ---------------------------------------------------------------------
    def _key(self) -> str:
        key = self.api_key or os.environ.get(self.api_key_env)
        if key and _CONTROL.search(key):
            # (a newline read with the key from a file): the HTTP library refused the header
            # with the key in its message, and the refusal was retried as a connection error
            where = "api_key=" if self.api_key else f"the environment variable {self.api_key_env}"
            raise ClientError(f"the API key in {where} contains a control character (a "
                              "trailing newline?), which no HTTP header can carry; remove it",
                              sent=False)
        if key:
            return key
        if self.base_url != DEFAULT_BASE_URLS[self.provider] and \
                self.api_key_env == DEFAULT_KEY_ENVS[self.provider]:
            # self-hosted OpenAI-compatible servers (vLLM, llama.cpp, Ollama) need no key, but
            # the SDKs insist on one; their documentation's convention is a placeholder (not
            # when the user named a variable of their own: an unset one sent the placeholder,
            # and every request was refused with HTTP 401 naming no variable)
            return "EMPTY"
        raise ClientError(f"no API key for {self.base_url}: set the environment variable "
                          f"{self.api_key_env} or pass api_key=", sent=False)

    def check_api_key(self) -> None:
        """Raise ConfigurationError now if no API key can be found (calls would all fail).

        Examples
        --------
        >>> OpenAIChat("gpt-4o", base_url="https://api.openai.com/v1",
        ...            api_key_env="RX_EXAMPLE_NO_KEY").check_api_key()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.ConfigurationError: no API key ... RX_EXAMPLE_NO_KEY ...
        >>> OpenAIChat("llama-3.1-8b", base_url="http://localhost:8000/v1").check_api_key()

        (A server other than the provider's needs no key, unless ``api_key_env`` names a
        variable other than the default: an unset one is then an error.)
        """
        try:
            self._key()
        except ClientError as exc:
            raise ConfigurationError(str(exc)) from None

    def _redact(self, text: str) -> str:
        """``text`` without the API key (an endpoint's error message may quote the request)."""
        key = self.api_key or os.environ.get(self.api_key_env)
        return text.replace(key, "[API key]") if key else text

    def _cause(self, exc: Exception) -> Exception | None:
        """``exc`` as the cause of the :class:`ClientError` reporting it, or None when its
        traceback (its chain included) quotes the API key: a traceback prints the cause."""
        text = "".join(traceback.format_exception(exc))
        return exc if self._redact(text) == text else None

    def _module(self):
        try:
            return __import__(self.sdk)
        except ImportError as exc:
            raise ConfigurationError(f"{type(self).__name__} needs the {self.sdk} SDK: "
                                     f"pip install 'restrictiveness[{self.sdk}]'") from exc

    def _sdk_client(self):
        with self._lock:
            if self._client is None:
                self._client = self._make_client(self._module(), self._key())
            return self._client

    def _make_client(self, module, api_key: str):
        # the SDK's own retries are off: ours are counted and configurable
        return getattr(module, self.sdk_client)(
            api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout,
            http_client=_bounded_http_client(module, self.timeout))

    def _request(self, client, messages: Sequence[Mapping], tools: Sequence[Tool] | None,
                 tool_choice: str):
        raise NotImplementedError

    def _parse(self, response) -> ChatReply:
        raise NotImplementedError

    # -- calls --------------------------------------------------------------------------------
    def _classify(self, exc: Exception) -> tuple[bool, float | None, int | None]:
        """(retry?, the wait the endpoint asked for, HTTP status) for an SDK exception."""
        sdk = self._module()
        if isinstance(exc, sdk.APIStatusError):
            status = int(exc.status_code)
            headers = getattr(getattr(exc, "response", None), "headers", None)
            # the endpoint's own word first, as the SDKs' retry policy (which ours replaces)
            # obeys it: retrying a 429 or 5xx it marks "false" (an error that will recur, such
            # as an exhausted quota) only spent the back-off, up to minutes per fit (a
            # redirect is never retried: it would only point again)
            told = str((headers or {}).get("x-should-retry", "")).strip().lower()
            retry = (told == "true" and not 300 <= status < 400) or (
                told != "false" and (status in RETRY_STATUSES or status >= 500))
            return retry, retry_after_seconds(headers) if retry else None, status
        if isinstance(exc, sdk.APIConnectionError):  # includes APITimeoutError
            return True, None, None
        return False, None, None

    def chat(self, messages: Sequence[Mapping], tools: Sequence[Tool] | None = None,
             tool_choice: Literal["auto", "none"] = "auto") -> ChatReply:
        """One model call with the retry policy; raises :class:`ClientError` when it fails.

        Parameters
        ----------
        messages : sequence of dict
            Provider-neutral messages (module docstring).
        tools : sequence of Tool, optional
            Tools the model may call (native tool protocol).
        tool_choice : {"auto", "none"}
            ``"none"`` forbids tool calls in this reply (messages may still hold earlier ones).

        Returns
        -------
        ChatReply
            The text, any tool calls, the token counts, the call's wall time and retries.

        Examples
        --------
        Needs a running endpoint (here a local OpenAI-compatible server):

        >>> llm = OpenAIChat("llama-3.1-8b", base_url="http://localhost:8000/v1")
        >>> reply = llm.chat([{"role": "user", "content": "Say hi"}])  # doctest: +SKIP
        >>> reply.text, reply.retries  # doctest: +SKIP
        ('Hi!', 0)
        """
        if tool_choice not in ("auto", "none"):
            raise ConfigurationError("tool_choice must be 'auto' or 'none'")
        client = self._sdk_client()
        rng = random.Random()  # jitter only: never affects results
        start, retries = time.perf_counter(), 0
        while True:
            pause(0.0)  # a stopped run neither counts nor sends another request
            if self.budget is not None:
                try:
                    self.budget.acquire()
                except BudgetExhausted as exc:
                    raise BudgetExhausted(f"{self.provider} {self.model} at {self.base_url}: "
                                          f"{exc}", retries) from None
            request_slot()
            try:
                response = self._request(client, list(messages), tools, tool_choice)
            except Exception as exc:  # noqa: BLE001 - classified below, re-raised as ClientError
                pause(0.0)  # ended by the run's stop: the run's end, not the endpoint's failure
                if isinstance(exc.__cause__, ReplyTooLarge):  # wrapped by the anthropic SDK
                    exc = exc.__cause__
                retry, wait, status = self._classify(exc)
                what = f"HTTP {status}" if status is not None else type(exc).__name__
                if not retry and status is not None and (status in RETRY_STATUSES
                                                         or status >= 500):
                    what += " (not retried: the endpoint answered x-should-retry: false)"
                if status is not None and 300 <= status < 400:
                    where = getattr(getattr(exc, "response", None), "headers", {}).get(
                        "location")
                    what += (f" (the endpoint redirects to {self._redact(repr(where))}, and "
                             "redirects are not followed: give the final address as base_url)")
                if not retry or retries >= self.max_retries:
                    tries = f" after {retries} retr{'y' if retries == 1 else 'ies'}" \
                        if retries else ""
                    raise ClientError(f"{self.provider} {self.model} at {self.base_url}: "
                                      f"{what}{tries}: {self._redact(str(exc))[:500]}",
                                      retries, status) from self._cause(exc)
                pause(wait if wait is not None else
                      backoff_delay(retries, self.backoff, self.backoff_max, rng))
                retries += 1
                continue
            try:
                reply = self._parse(response)
            except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
                # an HTML page, a JSON list, no choices: the endpoint's fault, not the model's
                raise ClientError(f"{self.provider} {self.model} at {self.base_url}: malformed "
                                  f"reply ({self._redact(str(exc))[:200]}): "
                                  f"{self._redact(repr(response))[:300]}", retries) from exc
            reply.seconds, reply.retries = time.perf_counter() - start, retries
            if self.budget is not None:
                self.budget.charge(_spent_tokens(reply, messages))
            return reply

    def __call__(self, messages: Sequence[Mapping]) -> str:
        """The reply text (the plain ``client(messages) -> str`` protocol)."""
        return self.chat(messages).text


def _is_real(value) -> bool:
    """Whether ``value`` is a real number that is not a bool (NaN included: compare it)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _tokens(usage, name: str) -> int | None:
    """The reply's ``usage.<name>``: None when the endpoint did not report it; a count that is
    not a count (negative, NaN, 1e30, text, a bool) is a malformed reply (``ValueError``), not
    usage: it was dropped as unreported, or, as 1e30, summed and priced."""
    return _token_count(getattr(usage, name, None), f"the reply's usage.{name}")


def _anthropic_input_tokens(usage) -> int | None:
    """All input tokens of a Messages API reply: ``input_tokens`` counts only those after the
    last cache breakpoint, and the prompt's cached part is reported apart, as cache writes and
    reads (a growing agent conversation with caching on reported a few tokens a turn, so usage
    and a token budget missed nearly all of it). None when ``input_tokens`` is not reported."""
    cached = [_tokens(usage, name) or 0
              for name in ("cache_creation_input_tokens", "cache_read_input_tokens")]
    count = _tokens(usage, "input_tokens")
    return None if count is None else count + sum(cached)


def _json_arguments(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"_unparsed": text}
    return value if isinstance(value, dict) else {"_unparsed": text}


def _tool_input(value) -> dict:
    """A tool call's arguments (an Anthropic tool_use block's ``input``, an OpenAI call's
    ``arguments``): an object as is, a JSON text decoded; anything else (a list, a text that is
    no JSON object) as ``{"_unparsed": text}``, so that the Agent answers "Not run" instead of
    the whole fit failing as a malformed reply.

    Examples
    --------
    >>> _tool_input('{"code": "print(1)"}'), _tool_input({"code": "print(1)"})
    ({'code': 'print(1)'}, {'code': 'print(1)'})
    >>> _tool_input("[1]"), _tool_input(None)
    ({'_unparsed': '[1]'}, {})
    """
    if isinstance(value, dict):
        return dict(value)
    if value is None:
        return {}
    return _json_arguments(value if isinstance(value, str) else json.dumps(value, default=str))


class OpenAIChat(ChatAdapter):
    """A chat model behind the OpenAI Chat Completions API (OpenAI or any compatible server).

    Parameters
    ----------
    model : str
        Model id, e.g. ``"gpt-4o"`` or the name a local server gives its model.
    base_url : str, optional
        Endpoint, e.g. ``"http://localhost:8000/v1"`` for vLLM (default: ``OPENAI_BASE_URL``
        or OpenAI's). A server at another address needs no API key (a placeholder is sent),
        unless ``api_key_env`` names a variable of your own, which must then be set.
    api_key : str, optional
        Default: the environment variable ``api_key_env``.
    api_key_env : str
        Where the key is read (in each process that calls the model).
    temperature : float, optional
        Sampling temperature (default: the endpoint's).
    max_tokens : int, optional
        Output-token limit per reply: sent as ``max_completion_tokens`` to OpenAI's API (at
        ``api.openai.com``, which refuses ``max_tokens`` for its reasoning models), as
        ``max_tokens`` to other servers.
    timeout : float
        Seconds per HTTP attempt in all, from connecting to the reply's last byte.
    max_retries : int
        Retries of a failed request (see the module docstring for which errors).
    extra_body : dict, optional
        Extra request fields (``{"reasoning_effort": "low"}``, ``{"seed": 0}``, ...).
    backoff, backoff_max : float
        First retry wait and its cap, in seconds (doubling, with jitter); a ``Retry-After``
        header overrides them (waiting at most ``RETRY_AFTER_MAX``, 300 s).
    budget : CallBudget, optional
        An enforced limit on the requests sent and tokens used (:class:`CallBudget`).

    Notes
    -----
    A reply's content given as parts (as some compatible servers send it) is read as the
    text of its text parts; a refusal without content is read as the refusal's text, with
    ``stop_reason="refusal"``.

    Examples
    --------
    >>> llm = OpenAIChat("llama-3.1-8b", base_url="http://localhost:8000/v1")
    >>> llm
    OpenAIChat('llama-3.1-8b', base_url='http://localhost:8000/v1')
    >>> llm([{"role": "user", "content": "Say hi"}])  # doctest: +SKIP
    'Hi!'
    """

    provider, sdk, sdk_client = "openai", "openai", "OpenAI"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", temperature: float | None = None,
                 max_tokens: int | None = None, timeout: float = 120,
                 max_retries: int = 6, extra_body: Mapping | None = None, *,
                 backoff: float = 0.5, backoff_max: float = 60.0,
                 budget: CallBudget | None = None) -> None:
        super().__init__(model, base_url, api_key, api_key_env, temperature, max_tokens,
                         timeout, max_retries, extra_body, backoff, backoff_max, budget)
        n = (self.extra_body or {}).get("n", 1)
        if not (is_whole(n) and n == 1):
            # the endpoint made (and billed) n replies, of which the first was read and the
            # others dropped without a word
            raise ConfigurationError(f"OpenAIChat: extra_body may not ask for n={n!r} "
                                     "replies: one reply per call is read; ask again, or run "
                                     "more replications, for more")
        if max_tokens is not None and "max_completion_tokens" in (self.extra_body or {}):
            raise ConfigurationError("OpenAIChat: give the output-token limit once, as "
                                     "max_tokens= (sent as max_completion_tokens to OpenAI's "
                                     "API), not also in extra_body")

    def _openai_api(self) -> bool:
        """Whether the endpoint is OpenAI's own API (not a compatible server)."""
        return urllib.parse.urlsplit(self.base_url).hostname == "api.openai.com"

    @staticmethod
    def _messages(messages: Sequence[Mapping]) -> list[dict]:
        out = []
        for m in messages:
            if m["role"] == "assistant" and m.get("tool_calls"):
                out.append({"role": "assistant", "content": m.get("content") or None,
                            "tool_calls": [{"id": c["id"], "type": "function",
                                            "function": {"name": c["name"],
                                                         "arguments": json.dumps(c["arguments"])}}
                                           for c in m["tool_calls"]]})
            elif m["role"] == "tool":
                out.append({"role": "tool", "tool_call_id": m["tool_call_id"],
                            "content": m["content"]})
            else:
                out.append({"role": m["role"], "content": m["content"]})
        return out

    def _request(self, client, messages: Sequence[Mapping], tools: Sequence[Tool] | None,
                 tool_choice: str):
        kwargs: dict[str, Any] = {"model": self.model, "messages": self._messages(messages)}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            # OpenAI's own API refuses max_tokens for its reasoning models (HTTP 400, every
            # call) and takes max_completion_tokens for all; compatible servers take max_tokens
            kwargs["max_completion_tokens" if self._openai_api() else "max_tokens"] = \
                self.max_tokens
        if tools:
            kwargs["tools"] = [{"type": "function", "function": t.to_json()} for t in tools]
            kwargs["tool_choice"] = tool_choice
        return client.chat.completions.create(**kwargs, extra_body=self.extra_body,
                                              timeout=self.timeout)

    def _parse(self, response) -> ChatReply:
        if not response.choices:
            raise ValueError(_error_body(response) or "the reply has no choices")
        choice = response.choices[0]
        message = choice.message
        if message is None:  # read as an empty answer, it looked like a model saying nothing
            raise ValueError("the reply's choice has no message")
        # arguments are a JSON string in the API; some compatible servers (Hugging Face's
        # TGI) send the object itself, and every native agent fit failed as a malformed reply
        raw_calls = getattr(message, "tool_calls", None) or ()
        if not isinstance(raw_calls, list | tuple):  # a dict's keys were read as no call
            raise ValueError(f"the reply's tool_calls is a {type(raw_calls).__name__}, not a "
                             "list")
        if any(getattr(c, "function", None) is None for c in raw_calls):
            # only function tools are offered; a call of another kind was dropped unread
            raise ValueError("a tool call of the reply is not a function call")
        calls = tuple(ToolCall(c.id, c.function.name, _tool_input(c.function.arguments))
                      for c in raw_calls)
        usage = getattr(response, "usage", None)
        content = getattr(message, "content", None)
        if isinstance(content, list):
            # content parts, as some compatible servers send (Mistral's): each call was a
            # malformed-reply ClientError; the text is that of the text parts
            content = "".join(str(part.get("text") or "") for part in content
                              if isinstance(part, dict) and part.get("type") == "text")
        stop = getattr(choice, "finish_reason", None)
        refusal = getattr(message, "refusal", None)
        if not content and isinstance(refusal, str) and refusal:
            # a refusal read as an empty answer lost the model's reason (Anthropic's adapter
            # reports stop_reason "refusal" too)
            content, stop = refusal, "refusal"
        return ChatReply(content or "", calls, _tokens(usage, "prompt_tokens"),
                         _tokens(usage, "completion_tokens"), stop_reason=stop)


#: What an empty (or blank) assistant turn says in an Anthropic request: the Messages API
#: refuses text blocks without visible text.
EMPTY_REPLY = "(empty reply)"


class AnthropicChat(ChatAdapter):
    """A Claude model behind Anthropic's Messages API (or a compatible endpoint).

    System messages become the request's ``system`` text; tool calls become ``tool_use`` and
    ``tool_result`` blocks. A reply's input tokens include those written to and read from the
    prompt cache (which the API reports apart from ``input_tokens``); ``Results.usage`` prices
    them all at the input price, an upper bound where cache reads cost less. An empty
    assistant turn of the conversation (the model replied nothing) is sent as
    :data:`EMPTY_REPLY`, since the API refuses blank text.

    Parameters
    ----------
    model : str
        Model id, e.g. ``"claude-sonnet-4-5"``.
    base_url : str, optional
        Endpoint (default: ``ANTHROPIC_BASE_URL`` or Anthropic's).
    api_key : str, optional
        Default: the environment variable ``api_key_env``.
    api_key_env : str
        Where the key is read (in each process that calls the model).
    temperature : float, optional
        Sampling temperature in [0, 1], the Messages API's range (default: the endpoint's).
    max_tokens : int
        Output-token limit per reply, required by the API; the default is the paper's limit
        (S.1.2).
    timeout : float
        Seconds per HTTP attempt in all, from connecting to the reply's last byte (long
        replies are slow).
    max_retries : int
        Retries of a failed request (see the module docstring for which errors).
    extra_body : dict, optional
        Extra request fields, e.g. thinking settings ``{"thinking": {"type": "adaptive"}}``.
    backoff, backoff_max : float
        First retry wait and its cap, in seconds (doubling, with jitter); a ``retry-after``
        header overrides them (waiting at most ``RETRY_AFTER_MAX``, 300 s).
    budget : CallBudget, optional
        An enforced limit on the requests sent and tokens used (:class:`CallBudget`).

    Examples
    --------
    >>> AnthropicChat("claude-sonnet-4-5", max_tokens=8000)
    AnthropicChat('claude-sonnet-4-5', base_url='https://api.anthropic.com', max_tokens=8000)
    """

    provider, sdk, sdk_client = "anthropic", "anthropic", "Anthropic"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 api_key_env: str = "ANTHROPIC_API_KEY", temperature: float | None = None,
                 max_tokens: int = 32000, timeout: float = 600,
                 max_retries: int = 6, extra_body: Mapping | None = None, *,
                 backoff: float = 0.5, backoff_max: float = 60.0,
                 budget: CallBudget | None = None) -> None:
        if max_tokens is None:
            raise ConfigurationError("AnthropicChat: max_tokens is required by the Messages "
                                     "API; give the output-token limit per reply")
        super().__init__(model, base_url, api_key, api_key_env, temperature, max_tokens,
                         timeout, max_retries, extra_body, backoff, backoff_max, budget)
        if self.temperature is not None and self.temperature > 1:
            # accepted up to OpenAI's 2, it was sent with every request and refused (HTTP 400)
            # by every one: each fit of the study failed at its first call
            raise ConfigurationError(f"AnthropicChat: temperature must be in [0, 1] (the "
                                     f"Messages API's range), got {temperature!r}")

    @staticmethod
    def _messages(messages: Sequence[Mapping]) -> tuple[str | None, list[dict]]:
        system = [m["content"] for m in messages if m["role"] == "system"]
        out: list[dict] = []
        for m in messages:
            if m["role"] == "system":
                continue
            if m["role"] == "tool":
                role, blocks = "user", [{"type": "tool_result", "tool_use_id": m["tool_call_id"],
                                         "content": m["content"]}]
            elif m["role"] == "assistant" and m.get("tool_calls"):
                role = "assistant"
                # with thinking on, the API requires the turn's thinking blocks (as received,
                # signed) before its tool calls: without them an agent's second request was
                # refused (HTTP 400)
                blocks = [dict(b) for b in m.get("thinking") or ()] + \
                    ([{"type": "text", "text": m["content"]}]
                          if (m.get("content") or "").strip() else []) \
                    + [{"type": "tool_use", "id": c["id"], "name": c["name"],
                        "input": c["arguments"]} for c in m["tool_calls"]]
            else:
                # the API refuses a text block without visible text (HTTP 400), so an agent
                # whose model once replied nothing (a reply spent on thinking) failed at its
                # next turn; the turn is kept, saying what it was
                text = m["content"]
                if m["role"] == "assistant" and not text.strip():
                    text = EMPTY_REPLY
                role = m["role"]
                blocks = [dict(b) for b in m.get("thinking") or ()] + \
                    [{"type": "text", "text": text}]
            # the API alternates roles: tool results and a following note form one user turn
            if out and out[-1]["role"] == role:
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": role, "content": blocks})
        return ("\n\n".join(system) if system else None), out

    def _request(self, client, messages: Sequence[Mapping], tools: Sequence[Tool] | None,
                 tool_choice: str):
        system, msgs = self._messages(messages)
        kwargs: dict[str, Any] = {"model": self.model, "messages": msgs,
                                  "max_tokens": self.max_tokens}
        if system is not None:
            kwargs["system"] = system
        extra = dict(self.extra_body or {})
        if self.temperature is not None:
            # a body field: recent SDKs no longer take it as an argument of create()
            extra.setdefault("temperature", self.temperature)
        if tools:
            kwargs["tools"] = [{"name": t.name, "description": t.description,
                                "input_schema": t.parameters} for t in tools]
            kwargs["tool_choice"] = {"type": tool_choice}
        return client.messages.create(**kwargs, extra_body=extra or None, timeout=self.timeout)

    def _parse(self, response) -> ChatReply:
        if response.content is None:
            raise ValueError(_error_body(response) or "the reply has no content")
        text, calls, thinking, unknown = [], [], [], []
        for block in response.content:
            if block.type == "text":
                text.append(block.text)
            elif block.type == "tool_use":
                calls.append(ToolCall(block.id, block.name, _tool_input(block.input)))
            elif block.type == "thinking":
                thinking.append({"type": "thinking", "thinking": block.thinking,
                                 "signature": block.signature})
            elif block.type == "redacted_thinking":
                thinking.append({"type": "redacted_thinking", "data": block.data})
            else:
                unknown.append(str(block.type))
        if unknown and not text and not calls:
            # skipped, they left an empty answer: the agent saw the model say nothing
            raise ValueError(f"the reply holds no text or tool call, only content blocks of "
                             f"types the adapter cannot read: {sorted(set(unknown))}")
        usage = getattr(response, "usage", None)
        return ChatReply("".join(text), tuple(calls), _anthropic_input_tokens(usage),
                         _tokens(usage, "output_tokens"),
                         stop_reason=getattr(response, "stop_reason", None),
                         thinking=tuple(thinking))


def _error_body(response) -> str | None:
    """The error a reply with status 200 carries instead of an answer (``{"error": {...}}``, as
    some compatible servers send it), as text; ``None`` when it carries none."""
    error = getattr(response, "error", None)
    if error is None:
        return None
    text = error.get("message") if isinstance(error, dict) else None
    return f"the endpoint answered with an error: {text if isinstance(text, str) else error}"


def call_client(client: Callable, messages: Sequence[Mapping], tools: Sequence[Tool] | None = None,
                tool_choice: Literal["auto", "none"] = "auto") -> ChatReply:
    """Ask ``client`` once: an adapter's :meth:`~ChatAdapter.chat`, or a plain callable
    ``client(messages) -> str`` (timed; any exception it raises becomes a :class:`ClientError`).

    Raises
    ------
    ClientError
        The call failed, or a plain callable returned something other than a string.
    ConfigurationError
        Tools were asked of a client without a ``chat`` method.
    """
    chat = getattr(client, "chat", None)
    if callable(chat):
        reply = chat(messages, tools=tools, tool_choice=tool_choice)
        if not isinstance(reply, ChatReply):
            raise ConfigurationError(f"client.chat returned {type(reply).__name__}, expected "
                                     "ChatReply")
        return reply
    if tools:
        raise ConfigurationError("native tool calls need a client with a chat() method "
                                 "(rx.llm.OpenAIChat, rx.llm.AnthropicChat)")
    request_slot()
    start = time.perf_counter()
    try:
        text = client(messages)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's client is a client failure
        raise ClientError(f"the client raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(text, str):
        # a failed call, not a set-up error: the call was made (and counts in the fit's usage),
        # and an SDK's reply text can be None now and then (a refusal, a tool-only reply)
        raise ClientError(f"the client returned {type(text).__name__}, not the reply's text "
                          "(a str)")
    return ChatReply(text, seconds=time.perf_counter() - start)
