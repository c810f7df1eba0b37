"""Local language-model endpoints for the tests: OpenAI Chat Completions and Anthropic Messages
protocols on 127.0.0.1, with scripted replies and scripted misbehaviour.

The server answers each request with ``reply(body) -> str | dict`` (a dict may carry
``"text"`` and ``"tool_calls"``: ``[{"id", "name", "arguments"}]``), after consuming one step of
its script if any is left:

* ``("status", code, headers)`` — answer with that HTTP status (an error body) and headers;
* ``("slow", seconds)`` — wait, then answer normally (a client with a shorter timeout gives up);
* ``("drop",)`` — close the connection without answering;
* ``("raw", code, body, headers)`` — answer with that status and those body bytes, verbatim;
* ``("trickle", seconds)`` — answer normally, but send the body a byte at a time, ``seconds``
  apart (each read is quick, the whole reply slow);
* ``("trickle_head", seconds)`` — the same with the status line and headers (the body follows
  at once, if the client is still there).

``fail_with=code`` answers every request with that status; ``refuse(body) -> code | None``
answers the requests it names with that status (a server refusing tools, say); ``delay``
delays every answer.
Token counts are deterministic functions of the request and the reply, so tests can check the
totals: input = characters of the JSON messages // 4, output = characters of the text // 4.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = Callable[[dict], "str | dict"]


def input_tokens(body: dict) -> int:
    return len(json.dumps(body.get("messages", []), sort_keys=True)) // 4


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        owner = self.server.owner
        step = owner._record(self.path, dict(self.headers), body)
        if owner.delay:
            time.sleep(owner.delay)
        if owner.fail_with is not None:
            return self._send(owner.fail_with, {"error": {"message": "scripted failure",
                                                          "type": "server_error"}})
        refused = owner.refuse(body) if owner.refuse is not None else None
        if refused is not None:
            return self._send(refused, {"error": {"message": "refused", "type": "refused"}})
        if step is not None:
            kind = step[0]
            if kind == "drop":
                self.close_connection = True
                return None
            if kind == "raw":
                return self._send(step[1], step[2], step[3] if len(step) > 3 else {})
            if kind == "status":
                return self._send(step[1], {"error": {"message": f"scripted {step[1]}",
                                                      "type": "scripted"}},
                                  step[2] if len(step) > 2 else {})
            if kind == "slow":
                time.sleep(step[1])
        out = owner.reply(body)
        out = {"text": out} if isinstance(out, str) else dict(out)
        payload = owner.protocol_reply(body, out)
        return self._send(200, payload, pause=step[1] if step and step[0] == "trickle" else 0,
                          head_pause=step[1] if step and step[0] == "trickle_head" else 0)

    def _send(self, status: int, payload: dict | bytes, headers: dict | None = None,
              pause: float = 0, head_pause: float = 0) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, str(v))
            if head_pause:  # send the buffered status line and headers a byte at a time
                head = b"".join(self._headers_buffer) + b"\r\n"
                self._headers_buffer = []
                for i in range(len(head)):
                    self.wfile.write(head[i:i + 1])
                    self.wfile.flush()
                    time.sleep(head_pause)
            else:
                self.end_headers()
            if not pause:
                self.wfile.write(data)
            for i in range(len(data) if pause else 0):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ChatServer

    def handle_error(self, request, client_address) -> None:  # quiet on client hang-ups
        pass


class ChatServer:
    """A scripted chat endpoint (``protocol`` "openai" or "anthropic") in a thread."""

    def __init__(self, protocol: str, reply: Reply, script=(), delay: float = 0.0,
                 fail_with: int | None = None,
                 refuse: Callable[[dict], int | None] | None = None) -> None:
        assert protocol in ("openai", "anthropic")
        self.protocol, self.reply = protocol, reply
        self.script, self.delay, self.fail_with = list(script), delay, fail_with
        self.refuse = refuse
        self.requests: list[dict] = []
        self.times: list[float] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}" + ("/v1" if self.protocol == "openai" else "")

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _record(self, path: str, headers: dict, body: dict):
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            self.times.append(time.monotonic())
            return self.script.pop(0) if self.script else None

    def protocol_reply(self, body: dict, out: dict) -> dict:
        text, calls = out.get("text", ""), out.get("tool_calls", [])
        usage_in, usage_out = input_tokens(body), len(text) // 4
        if self.protocol == "openai":
            message = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = [
                    {"id": c["id"], "type": "function",
                     "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                    for c in calls]
            return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": message,
                                 "finish_reason": "tool_calls" if calls else "stop"}],
                    "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out,
                              "total_tokens": usage_in + usage_out}}
        content = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}
            for c in calls]
        return {"id": "msg_test", "type": "message", "role": "assistant",
                "model": body.get("model"), "content": content,
                "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}


def tool_results(body: dict) -> list[str]:
    """The tool results a request carries (either protocol), in order."""
    out = []
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            out.append(m["content"])
        elif isinstance(m.get("content"), list):
            out += [b["content"] for b in m["content"] if b.get("type") == "tool_result"]
    return out
