"""Language-model procedures against real endpoints, offline: the openai and anthropic SDKs talk
to scripted servers on 127.0.0.1 (tests/llm_server.py) — retries, usage, caches, native tool
calls, concurrency, picklability and the Table-2 command line."""

from __future__ import annotations

import importlib
import json
import os
import pickle
import re
import signal
import sys
import time

import numpy as np
import pytest
from llm_server import ChatServer, input_tokens, tool_results
from scripted import fenced
from test_ai_studies import GP_PROGRAM

import restrictiveness as rx
from restrictiveness.ai.sandbox import SandboxLimits
from restrictiveness.cli import main
from restrictiveness.engine.protocol import FunctionRule, Procedure
from restrictiveness.shared.exceptions import ConfigurationError
from restrictiveness.shared.sample import Sample

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="sandbox limits need Linux")

LIMITS = SandboxLimits(wall_seconds=60)
#: Short backoff for tests: the retry logic runs unchanged, only its waits are small.
QUICK = {"backoff": 0.01, "backoff_max": 0.05}

MEAN_PROGRAM = """import numpy as np

def predict(X_train, y_train, X):
    return np.full(len(X), float(np.mean(y_train)))
"""


def adapter(server: ChatServer, model: str = "gp-model", **options):
    cls = rx.llm.OpenAIChat if server.protocol == "openai" else rx.llm.AnthropicChat
    options = {"timeout": 20, **QUICK, **options}
    return cls(model, base_url=server.base_url, **options)


def gp_study(procs, replications=2, seed=3):
    return rx.lottery.study({"GP regression": rx.lottery.gp_regression(), **procs}, n=[20],
                            replications=replications, seed=seed, n_eval=100)


def gp_losses(res, label):
    loss = res.dataset["loss"].sel(discrepancy="mse")
    return loss.sel(procedure=label).values, loss.sel(procedure="GP regression").values


@pytest.fixture(params=["openai", "anthropic"])
def protocol(request):
    return request.param


# ------------------------------------------------------------------------ the adapters


def test_adapters_speak_each_protocol(protocol, monkeypatch):
    monkeypatch.setenv("RX_TEST_KEY", "sk-test-123")
    with ChatServer(protocol, lambda body: f"hello from {body['model']}") as server:
        llm = adapter(server, "m-1", api_key_env="RX_TEST_KEY", temperature=0.25,
                      max_tokens=321, extra_body={"seed": 7})
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Say hello."}]
        reply = llm.chat(messages)
        assert llm(messages) == "hello from m-1"               # the plain-callable protocol
    request = server.requests[0]
    body = request["body"]
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert body["model"] == "m-1" and body["temperature"] == 0.25 and body["seed"] == 7
    assert body["max_tokens"] == 321
    assert "sk-test-123" in (headers.get("authorization", "") + headers.get("x-api-key", ""))
    if protocol == "openai":
        assert request["path"] == "/v1/chat/completions" and body["messages"] == messages
    else:
        assert request["path"] == "/v1/messages" and body["system"] == "Be brief."
        assert body["messages"] == [{"role": "user",
                                     "content": [{"type": "text", "text": "Say hello."}]}]
    assert reply.text == "hello from m-1" and reply.retries == 0
    assert reply.input_tokens == input_tokens(body)
    assert reply.output_tokens == len("hello from m-1") // 4


def test_adapters_are_picklable_configuration(protocol):
    with ChatServer(protocol, lambda body: "ok") as server:
        llm = adapter(server, api_key="sk-secret-key")
        llm([{"role": "user", "content": "x"}])               # creates the SDK client
        back = pickle.loads(pickle.dumps(llm))
        assert back([{"role": "user", "content": "y"}]) == "ok"
    assert back.cache_identity() == llm.cache_identity()
    assert "sk-secret-key" not in repr(llm)
    study = gp_study({"C": rx.Completion(llm, limits=LIMITS)})
    assert "sk-secret-key" not in json.dumps(study.configuration())


def test_scripted_failures_are_retried_then_succeed(protocol):
    script = [("status", 429, {"Retry-After": "1"}), ("status", 500), ("slow", 3.0),
              ("drop",), ("status", 503)]
    with ChatServer(protocol, lambda body: "finally", script=script) as server:
        start = time.monotonic()
        reply = adapter(server, timeout=1.0).chat([{"role": "user", "content": "hi"}])
        wall = time.monotonic() - start
    assert reply.text == "finally"
    assert reply.retries == 5 and len(server.requests) == 6
    gaps = np.diff(server.times)
    # Retry-After: 1 was honoured although the backoff is 10 ms; the slow reply was abandoned
    # at the 1 s timeout, which counts from the attempt's start (before the server saw the
    # request, so the server's gap may be shorter on a loaded machine); the other retries
    # followed quickly
    assert gaps[0] >= 0.95 and gaps[2] < 2.5, gaps
    assert all(g < 0.5 for g in (gaps[1], gaps[3], gaps[4])), gaps
    # the Retry-After wait and the whole timeout: at least 2 s of the call
    assert reply.seconds <= wall and reply.seconds >= 2.0


def test_client_errors_are_not_retried_and_retries_are_bounded(protocol):
    with ChatServer(protocol, lambda body: "x", script=[("status", 400)]) as server:
        with pytest.raises(rx.llm.ClientError, match="HTTP 400") as err:
            adapter(server).chat([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1 and err.value.retries == 0 and err.value.status == 400
    with ChatServer(protocol, lambda body: "x", fail_with=500) as server:
        with pytest.raises(rx.llm.ClientError, match="after 3 retries") as err:
            adapter(server, max_retries=3).chat([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 4 and err.value.retries == 3


def test_the_endpoints_x_should_retry_header_decides_as_in_the_sdks(protocol):
    """The SDKs obey ``x-should-retry``; the policy that replaces theirs ignored it, so a 429
    or 5xx marked "false" (an error that recurs, e.g. an exhausted quota) was retried
    max_retries times, spending the whole back-off, and a 400 marked "true" was not retried."""
    messages = [{"role": "user", "content": "hi"}]
    for code in (429, 500, 529):
        script = [("status", code, {"x-should-retry": "false", "retry-after": "1"})]
        with ChatServer(protocol, lambda body: "x", script=script) as server:
            with pytest.raises(rx.llm.ClientError, match="x-should-retry: false") as err:
                adapter(server).chat(messages)
        assert len(server.requests) == 1 and err.value.retries == 0 and err.value.status == code
    script = [("status", 400, {"X-Should-Retry": "true"}), ("status", 409, {})]
    with ChatServer(protocol, lambda body: "finally", script=script) as server:
        reply = adapter(server).chat(messages)
    assert reply.text == "finally" and reply.retries == 2 and len(server.requests) == 3


def test_an_endpoint_quoting_the_api_key_does_not_leak_it_into_the_error(protocol):
    key = "sk-RECOGNISABLE-0123456789"
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}",
                                 "type": "invalid_request_error"}}).encode()
    with ChatServer(protocol, lambda body: "x", script=[("raw", 401, body)]) as server:
        with pytest.raises(rx.llm.ClientError) as err:
            adapter(server, api_key=key).chat([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1 and err.value.status == 401 and err.value.retries == 0
    assert key not in str(err.value) and "Incorrect API key provided: [API key]" in str(err.value)


@pytest.mark.parametrize("code", [301, 302, 307, 308])
def test_a_redirect_is_refused_by_name_not_followed(protocol, code):
    """Redirects were followed: the prompt went to whatever host the endpoint named, and a
    301/302 resent it as a GET without its messages, whose answer was taken for the model's."""
    key = "sk-RECOGNISABLE-0123456789"
    with ChatServer(protocol, lambda body: "from elsewhere") as elsewhere:
        target = elsewhere.base_url.replace("127.0.0.1", "localhost") + (
            "/chat/completions" if protocol == "openai" else "/v1/messages")
        with ChatServer(protocol, lambda body: "x",
                        script=[("raw", code, b"", {"location": target})]) as server:
            with pytest.raises(rx.llm.ClientError) as err:
                adapter(server, api_key=key).chat([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1 and len(elsewhere.requests) == 0
    assert err.value.status == code and err.value.retries == 0
    assert f"HTTP {code} (the endpoint redirects to {target!r}" in str(err.value)


def test_the_api_key_is_not_in_the_traceback_of_a_client_error(protocol):
    """The message was redacted, but the SDK's exception, chained as the cause, printed the
    key quoted by the endpoint with every traceback."""
    import traceback

    key = "sk-RECOGNISABLE-0123456789"
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}).encode()
    with ChatServer(protocol, lambda body: "x", script=[("raw", 401, body)]) as server:
        with pytest.raises(rx.llm.ClientError) as err:
            adapter(server, api_key=key).chat([{"role": "user", "content": "hi"}])
    assert err.value.status == 401
    assert key not in "".join(traceback.format_exception(err.value))
    # a cause without the key is kept for debugging
    with ChatServer(protocol, lambda body: "x", fail_with=503) as server:
        with pytest.raises(rx.llm.ClientError) as err:
            adapter(server, api_key=key, max_retries=0).chat([{"role": "user", "content": "hi"}])
    assert err.value.__cause__ is not None and err.value.status == 503


@pytest.mark.parametrize("cls", ["OpenAIChat", "AnthropicChat"])
def test_a_base_url_carrying_credentials_is_refused_without_quoting_them(cls, monkeypatch):
    """user:key@host was kept in the base URL, which repr, results, checkpoints and reply
    caches show and store."""
    make = getattr(rx.llm, cls)
    with pytest.raises(ConfigurationError, match="base_url must not carry credentials") as err:
        make("m", base_url="https://user:sk-RECOGNISABLE@proxy.example/v1")
    assert "RECOGNISABLE" not in str(err.value)
    variable = f"{make.provider.upper()}_BASE_URL"
    monkeypatch.setenv(variable, "https://sk-RECOGNISABLE@proxy.example")
    with pytest.raises(ConfigurationError, match=f"{variable} must not carry") as err:
        make("m")
    assert "RECOGNISABLE" not in str(err.value)


def test_a_base_url_with_a_query_is_refused_without_quoting_it(protocol, monkeypatch):
    """The SDK appends the API's path to the whole base URL: '.../v1?key=K' sent the request
    to '/v1/' with the query 'key=Kchat/completions' (a local server that ignores the path
    answered, a real one gives 404), and the key was shown in repr and stored in reply caches
    and results with the address."""
    with ChatServer(protocol, lambda body: "ok") as server:
        make = type(adapter(server))
        for url in (server.base_url + "?key=sk-RECOGNISABLE", server.base_url + "#part",
                    server.base_url + "?"):
            with pytest.raises(ConfigurationError, match="base_url must be the endpoint's "
                               r"address without a query \(\?...\) or fragment") as err:
                make("m", base_url=url)
            assert "RECOGNISABLE" not in str(err.value)
        variable = f"{make.provider.upper()}_BASE_URL"
        monkeypatch.setenv(variable, server.base_url + "?key=sk-RECOGNISABLE")
        with pytest.raises(ConfigurationError, match=f"{variable} must be the endpoint's"):
            make("m")
        monkeypatch.delenv(variable)
        assert make("m", base_url=server.base_url + "/", **QUICK).chat(
            [{"role": "user", "content": "hi"}]).text == "ok"
    path = "/v1/chat/completions" if protocol == "openai" else "/v1/messages"
    assert [r["path"] for r in server.requests] == [path]


@pytest.mark.parametrize("key", ["sk-RECOGNISABLE-0123456789\n", "sk-RECOGNISABLE\r\nX-Evil: 1"])
def test_an_api_key_with_a_control_character_is_refused_by_name(protocol, key, monkeypatch):
    """A key read with its trailing newline was refused by the HTTP library with the key in its
    message, retried as a connection error, and reported as 'Connection error.'."""
    import traceback

    monkeypatch.setenv("RX_TEST_KEY", key)
    with ChatServer(protocol, lambda body: "x") as server:
        llm = adapter(server, api_key_env="RX_TEST_KEY")
        with pytest.raises(rx.llm.ClientError, match="RX_TEST_KEY contains a control "
                                                     "character") as err:
            llm.chat([{"role": "user", "content": "hi"}])
        with pytest.raises(ConfigurationError, match="RX_TEST_KEY contains a control"):
            llm.check_api_key()
    assert len(server.requests) == 0 and err.value.retries == 0
    assert "RECOGNISABLE" not in "".join(traceback.format_exception(err.value))


def test_a_reply_cut_at_the_token_limit_says_so(protocol):
    """A reply cut off at max_tokens mid-program has no closed code block, and the fit failed
    with 'the response contains no Python code block' alone (the stop reason only in the
    calls' record): a limit too small failed every fit with nothing pointing at it."""
    sample = Sample(np.arange(10.0).reshape(5, 2), np.arange(5.0), ("a", "b"))
    cut = "Here is my program:\n```python\nimport numpy as np\n\ndef predict(X_tr"
    with ChatServer(protocol, lambda body: cut) as server:
        payload = server.protocol_reply({"messages": []}, {"text": cut})
        if protocol == "openai":
            payload["choices"][0]["finish_reason"], stop = "length", "length"
        else:
            payload["stop_reason"], stop = "max_tokens", "max_tokens"
        # an agent's tool round first, then its final reply cut off
        call = {"id": "c1", "name": "run_python", "arguments": {"code": "print(1)"}}
        tool = server.protocol_reply({"messages": []}, {"text": "", "tool_calls": [call]})
        server.script = [("raw", 200, json.dumps(p).encode()) for p in (payload, tool, payload)]
        llm = adapter(server, max_tokens=20)
        rules = [make(llm, limits=LIMITS).fit(sample, np.random.default_rng(0))
                 for make in (rx.Completion, lambda c, **o: rx.Agent(c, rounds=1, **o))]
        assert rules[1].info["rounds_used"] == 1 and len(server.requests) == 3
        plain = rx.Completion(llm, limits=LIMITS).fit(sample, np.random.default_rng(0))
    for rule in rules:
        assert rule.info["reason"] == "invalid-output"
        assert rule.info["message"] == (
            "invalid-output: the response contains no Python code block (the reply was cut "
            f"off at the output-token limit, stop reason {stop!r}: raise max_tokens)")
    # a reply that ended of itself without code says only that
    assert plain.info["message"] == "invalid-output: the response contains no Python code block"


def test_an_unset_key_variable_named_by_the_user_is_an_error_at_any_endpoint(protocol,
                                                                              monkeypatch):
    """A server other than the provider's gets a placeholder key when none is set; with
    api_key_env naming the user's own variable (a hosted compatible endpoint, --api-key-env on
    the command line) an unset variable sent the placeholder too, check_api_key passed, and
    every request was refused (HTTP 401) without naming the variable."""
    monkeypatch.delenv("RX_NO_SUCH_KEY", raising=False)
    monkeypatch.delenv(f"{protocol.upper()}_API_KEY", raising=False)
    with ChatServer(protocol, lambda body: "ok") as server:
        named = adapter(server, api_key_env="RX_NO_SUCH_KEY")
        with pytest.raises(ConfigurationError, match="set the environment variable "
                                                     "RX_NO_SUCH_KEY"):
            named.check_api_key()
        with pytest.raises(rx.llm.ClientError, match="no API key") as err:
            named.chat([{"role": "user", "content": "hi"}])
        assert not err.value.sent and not server.requests
        assert adapter(server).chat([{"role": "user", "content": "hi"}]).text == "ok"
        monkeypatch.setenv("RX_NO_SUCH_KEY", "sk-mine")
        assert named.chat([{"role": "user", "content": "hi"}]).text == "ok"
    headers = [{k.lower(): v for k, v in r["headers"].items()} for r in server.requests]
    keys = [h.get("authorization", h.get("x-api-key")) for h in headers]
    assert [k.removeprefix("Bearer ") for k in keys] == ["EMPTY", "sk-mine"]
    argv = ["replicate", "lottery", "-M", "2", "--llm", f"{protocol}:m", "--base-url",
            server.base_url, "--api-key-env", "RX_NO_SUCH_KEY"]
    monkeypatch.delenv("RX_NO_SUCH_KEY")
    assert main(argv) == 2


def test_a_call_refused_for_want_of_a_key_is_not_counted_as_made(protocol, monkeypatch):
    """A fit whose adapter found no API key (or one with a control character) sent nothing,
    yet its usage recorded one failed call: Results.usage() showed as many calls as fits for a
    run that made no request (a budget refusal already counted none)."""
    monkeypatch.delenv("RX_NO_SUCH_KEY", raising=False)
    monkeypatch.setenv("RX_BAD_KEY", "sk-test\n")
    sample = Sample(np.arange(10.0).reshape(5, 2), np.arange(5.0), ("a", "b"))
    cls = rx.llm.OpenAIChat if protocol == "openai" else rx.llm.AnthropicChat
    with ChatServer(protocol, lambda body: fenced(MEAN_PROGRAM)) as server:
        clients = [cls("m", api_key_env="RX_NO_SUCH_KEY"),      # the provider's own endpoint
                   adapter(server, api_key_env="RX_BAD_KEY")]
        rules = [make(llm, limits=LIMITS).fit(sample, np.random.default_rng(0))
                 for llm in clients for make in (rx.Completion, rx.Agent)]
        good = rx.Completion(adapter(server), limits=LIMITS).fit(sample,
                                                                 np.random.default_rng(0))
    assert len(server.requests) == 1
    for rule in rules:
        assert rule.info["reason"] == "client" and rule.info["client_calls"] == 0
        assert rule.info["usage"]["calls"] == rule.info["usage"]["failed_calls"] == 0
    assert "no API key" in rules[0].info["message"]
    assert "control character" in rules[2].info["message"]
    assert good.info["usage"]["calls"] == 1 and good.info["reason"] is None


@pytest.mark.parametrize("body, content_type", [
    (b"<html><body>Bad gateway</body></html>", "text/html"),
    (b"[1, 2]", "application/json"),
    (b'{"id": "x"}', "application/json"),  # no choices / content
    (b'{"choices": [{"index": 0, "finish_reason": "stop"}], "content": [{"type": "text"}]}',
     "application/json")])  # a choice without a message / a text block without text
def test_a_malformed_reply_is_a_client_error_not_an_empty_answer(protocol, body, content_type):
    with ChatServer(protocol, lambda body: "x",
                    script=[("raw", 200, body, {"content-type": content_type})]) as server:
        with pytest.raises(rx.llm.ClientError, match=r"malformed reply \(") as err:
            adapter(server).chat([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1 and err.value.retries == 0


@pytest.mark.parametrize("count", [-5, 1e30, float("nan"), "many", True, 2.5],
                         ids=["negative", "1e30", "nan", "text", "bool", "fraction"])
def test_token_counts_that_are_not_counts_are_a_malformed_reply(protocol, count):
    """A count that is not a count was dropped as unreported (-5, NaN, "many", True) or, as 1e30,
    summed into the fit's usage and priced ($1e24 at $1 per million tokens). Either way the
    reply is broken: it is a malformed reply, as any other the adapter cannot read."""
    if protocol == "openai" and count is True:
        pytest.skip("the OpenAI SDK reads a JSON true in an integer field as 1 before the "
                    "adapter sees it")
    with ChatServer(protocol, lambda body: "hello world") as server:
        good = adapter(server).chat([{"role": "user", "content": "hi"}])
        payload = server.protocol_reply({"messages": []}, {"text": "hello world"})
        name = "completion_tokens" if protocol == "openai" else "output_tokens"
        payload["usage"][name] = count
        server.script = [("raw", 200, json.dumps(payload).encode())]
        with pytest.raises(rx.llm.ClientError, match=rf"malformed reply \(the reply's "
                                                     rf"usage\.{name} is .*, not a token count"):
            adapter(server).chat([{"role": "user", "content": "hi"}])
    assert (good.input_tokens, good.output_tokens) == (input_tokens(
        server.requests[0]["body"]), len("hello world") // 4)
    with pytest.raises(ValueError, match=re.escape("input_tokens is 1e+30, not a token count")):
        rx.llm.ChatReply("hi", input_tokens=1e30)  # a reply of one's own client too


def test_anthropic_content_blocks_of_unknown_types_alone_are_a_malformed_reply():
    """Blocks of types the adapter cannot read were skipped: a reply made only of them read as
    an empty answer (the model saying nothing). Beside text they are still skipped."""
    with ChatServer("anthropic", lambda body: "x") as server:
        payload = server.protocol_reply({"messages": []}, {"text": "hello"})
        alone = dict(payload, content=[{"type": "server_tool_use", "id": "s1"},
                                       {"type": "web_search_tool_result", "content": []}])
        beside = dict(payload, content=[{"type": "server_tool_use", "id": "s1"},
                                        {"type": "text", "text": "hello"}])
        server.script = [("raw", 200, json.dumps(p).encode()) for p in (alone, beside)]
        with pytest.raises(rx.llm.ClientError, match=re.escape(
                "only content blocks of types the adapter cannot read: ['server_tool_use', "
                "'web_search_tool_result']")):
            adapter(server).chat([{"role": "user", "content": "hi"}])
        assert adapter(server).chat([{"role": "user", "content": "hi"}]).text == "hello"


def test_anthropic_input_tokens_include_the_prompt_cache():
    """The Messages API reports the cached part of a prompt apart from input_tokens (which
    counts only what follows the last cache breakpoint). With caching on (extra_body=
    {"cache_control": ...}) a reply read 1,000 tokens from the cache and wrote 100 but was
    recorded as 5 input tokens: usage, cost and a token budget missed 1,100 of 1,105."""
    with ChatServer("anthropic", lambda body: "hello world") as server:
        payload = server.protocol_reply({"messages": []}, {"text": "hello world"})
        payload["usage"] = {"input_tokens": 5, "cache_creation_input_tokens": 100,
                            "cache_read_input_tokens": 1000, "output_tokens": 7}
        absent = dict(payload, usage={"input_tokens": 5, "cache_creation_input_tokens": None,
                                      "output_tokens": 7})
        garbage = dict(payload, usage={"input_tokens": 5, "cache_read_input_tokens": -1,
                                       "output_tokens": 7})
        unreported = dict(payload, usage={"output_tokens": 7})
        server.script = [("raw", 200, json.dumps(p).encode())
                         for p in (payload, absent, garbage, unreported)]
        budget = rx.llm.CallBudget(max_tokens=1000)
        llm = adapter(server, budget=budget,
                      extra_body={"cache_control": {"type": "ephemeral"}})
        cached = llm.chat([{"role": "user", "content": "hi"}])
        assert (cached.input_tokens, cached.output_tokens) == (1105, 7)
        assert budget.tokens == 1112
        with pytest.raises(rx.llm.BudgetExhausted):
            llm.chat([{"role": "user", "content": "hi"}])
        plain = adapter(server).chat([{"role": "user", "content": "hi"}])
        with pytest.raises(rx.llm.ClientError, match=r"usage\.cache_read_input_tokens is -1"):
            adapter(server).chat([{"role": "user", "content": "hi"}])
        unknown = adapter(server).chat([{"role": "user", "content": "hi"}])
    assert (plain.input_tokens, unknown.input_tokens, unknown.output_tokens) == (5, None, 7)
    assert server.requests[0]["body"]["cache_control"] == {"type": "ephemeral"}


def test_anthropic_requests_hold_no_blank_text_block():
    """The Messages API refuses a text block without visible text (HTTP 400). An agent on the
    text protocol whose model once replied nothing appended an empty assistant turn, so its
    next request was refused and the fit failed with reason 'client'; a blank text beside
    native tool calls was sent too."""
    conversations = [
        [{"role": "user", "content": "task"}, {"role": "assistant", "content": ""},
         {"role": "user", "content": "No code block found."}],
        [{"role": "user", "content": "task"},
         {"role": "assistant", "content": " \n", "tool_calls": [
             {"id": "c1", "name": "run_python", "arguments": {"code": "print(1)"}}]},
         {"role": "tool", "tool_call_id": "c1", "content": "1"}]]
    with ChatServer("anthropic", lambda body: "ok") as server:
        llm = adapter(server)
        for messages in conversations:
            assert llm.chat(messages).text == "ok"
    first, second = (r["body"]["messages"] for r in server.requests)
    assert first[1] == {"role": "assistant",
                        "content": [{"type": "text", "text": "(empty reply)"}]}
    assert [b["type"] for b in second[1]["content"]] == ["tool_use"]
    for body in (first, second):
        for block in (b for m in body for b in m["content"] if b["type"] == "text"):
            assert block["text"].strip()


def test_openai_content_parts_and_refusals_are_read():
    """Content sent as a list of parts (some compatible servers) made every call a
    malformed-reply ClientError; a refusal (content null, "refusal" set) was read as an empty
    answer, the model's reason lost."""
    with ChatServer("openai", lambda body: "x") as server:
        parts = server.protocol_reply({"messages": []}, {"text": "x"})
        parts["choices"][0]["message"]["content"] = [
            {"type": "text", "text": "hello "}, {"type": "image_url", "image_url": {}},
            {"type": "text", "text": "world"}]
        refusal = server.protocol_reply({"messages": []}, {"text": "x"})
        refusal["choices"][0]["message"].update(content=None, refusal="I can't help.")
        server.script = [("raw", 200, json.dumps(p).encode()) for p in (parts, refusal)]
        llm = adapter(server)
        first, second = (llm.chat([{"role": "user", "content": "hi"}]) for _ in range(2))
        plain = llm.chat([{"role": "user", "content": "hi"}])
    assert (first.text, first.stop_reason) == ("hello world", "stop")
    assert (second.text, second.stop_reason) == ("I can't help.", "refusal")
    assert (plain.text, plain.stop_reason) == ("x", "stop")


def test_retry_after_waits_are_capped_and_garbage_falls_back_to_backoff(protocol, monkeypatch):
    from restrictiveness.ai import clients
    waits: list[float] = []
    monkeypatch.setattr(clients.time, "sleep", waits.append)
    script = [("status", 429, {"Retry-After": "999999999"}),
              ("status", 503, {"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"}),
              ("status", 429, {"Retry-After": "-5"}), ("status", 429, {"Retry-After": "soon"}),
              ("status", 503, {"retry-after-ms": "nan", "Retry-After": "3"})]
    with ChatServer(protocol, lambda body: "done", script=script) as server:
        reply = adapter(server).chat([{"role": "user", "content": "hi"}])
    assert reply.text == "done" and reply.retries == 5 and len(server.requests) == 6
    assert waits[:2] == [clients.RETRY_AFTER_MAX] * 2 == [300.0] * 2 and waits[4] == 3.0
    # QUICK backoff (10 ms doubling, 50 ms cap, equal jitter) for retries 2 and 3
    assert 0.02 <= waits[2] <= 0.04 and 0.025 <= waits[3] <= 0.05


def _warmed_up(server: ChatServer, **options):
    """An adapter whose SDK client exists: it is made at the first call, with the SDK's import
    (1 s of CPU for anthropic's, 20-30 s of wall clock on a loaded machine), which a timed
    call must not include."""
    llm = adapter(server, **options)
    llm._sdk_client()
    return llm


def test_a_reply_trickled_byte_by_byte_times_out_in_all(protocol):
    # each read arrives within the timeout; the whole body would take over 20 s
    with ChatServer(protocol, lambda body: "x" * 100,
                    script=[("trickle", 0.05)] * 2) as server:
        llm = _warmed_up(server, timeout=0.5, max_retries=1)
        start = time.monotonic()
        with pytest.raises(rx.llm.ClientError, match="APITimeoutError after 1 retry") as err:
            llm.chat([{"role": "user", "content": "hi"}])
        wall = time.monotonic() - start
    assert len(server.requests) == 2 and err.value.retries == 1 and wall < 10


def test_headers_trickled_byte_by_byte_time_out_in_all(protocol):
    # the status line and headers (about 150 bytes) a byte every 50 ms: each read is quick,
    # the head alone would take over 7 s; the whole attempt must end at the 0.5 s timeout
    with ChatServer(protocol, lambda body: "x", script=[("trickle_head", 0.05)] * 2) as server:
        llm = _warmed_up(server, timeout=0.5, max_retries=1)
        start = time.monotonic()
        with pytest.raises(rx.llm.ClientError, match="APITimeoutError after 1 retry: "
                                                     "Request timed out") as err:
            llm.chat([{"role": "user", "content": "hi"}])
        wall = time.monotonic() - start
    # two attempts of 0.5 s and a backoff of at most 50 ms (QUICK), with slack for a busy machine
    assert len(server.requests) == 2 and err.value.retries == 1 and wall < 2.5


def test_the_attempt_watchdog_wakes_a_blocked_receive_at_the_deadline():
    # the backstop for sends and receives that a peer keeps alive piecewise: a receive with no
    # timeout of its own returns (end of stream) when the attempt's time is up
    import socket

    from restrictiveness.ai.clients import _Attempt
    ours, peer = socket.socketpair()
    with ours, peer:
        # timed from before the attempt starts its clock: a thread descheduled between the
        # two (0.3 s under load) saw the receive end at once, as it should, and failed
        start = time.monotonic()
        attempt = _Attempt(0.3)
        attempt.watch(ours)
        ours.settimeout(None)
        assert ours.recv(10) == b"" and attempt.expired
        assert 0.25 < time.monotonic() - start < 2
        attempt.finish()
    ours, peer = socket.socketpair()
    with ours, peer:
        # a finished attempt leaves the sockets it watched alone: its timer is stopped, and a
        # timer that fires all the same (finish() racing it) does nothing. Both checked
        # directly: a 50 ms timer raced the test's own finish() on a loaded machine
        late = _Attempt(60)
        late.watch(ours)
        late.finish()
        late._timer.join(5)
        assert not late._timer.is_alive()
        late._expire()  # what the timer does when it fires
        ours.sendall(b"ok")  # would be EPIPE had the watchdog shut it down
        assert peer.recv(10) == b"ok" and not late.expired


def test_a_huge_reply_is_cut_off_and_not_retried(protocol, monkeypatch):
    from restrictiveness.ai import clients
    monkeypatch.setattr(clients, "MAX_REPLY_BYTES", 2000)
    with ChatServer(protocol, lambda body: "x" * 4000) as server:
        with pytest.raises(rx.llm.ClientError,
                           match="ReplyTooLarge: the reply exceeds 2000 bytes") as err:
            adapter(server).chat([{"role": "user", "content": "hi"}])
        monkeypatch.setattr(clients, "MAX_REPLY_BYTES", 8000)
        fits = adapter(server).chat([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 2 and err.value.retries == 0 and err.value.status is None
    assert fits.text == "x" * 4000


def test_the_proxy_environment_is_honoured_and_bounded(protocol, monkeypatch):
    # the scripted server as an HTTP proxy: it gets the absolute URL of a host that does not
    # resolve, so a reply means the request went through it; the head is trickled, so a reply
    # not bounded through the proxy would take over 7 s
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY",
                 "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with ChatServer(protocol, lambda body: "via the proxy",
                    script=[("slow", 0), ("trickle_head", 0.05)]) as server:
        host, port = server._server.server_address[:2]
        monkeypatch.setenv("HTTP_PROXY", f"http://{host}:{port}")
        cls = rx.llm.OpenAIChat if protocol == "openai" else rx.llm.AnthropicChat
        # the plain request with room to spare: under load, its 0.5 s attempt (a new
        # connection through the proxy, a lookup thread) once timed out before any trickle
        plain = cls("gp-model", base_url="http://llm.invalid/v1", timeout=20, max_retries=0)
        assert plain.chat([{"role": "user", "content": "hi"}]).text == "via the proxy"
        llm = cls("gp-model", base_url="http://llm.invalid/v1", timeout=0.5, max_retries=0)
        llm._sdk_client()  # made before the clock starts, as the timed call must not include
        start = time.monotonic()
        with pytest.raises(rx.llm.ClientError, match="Request timed out"):
            llm.chat([{"role": "user", "content": "hi"}])
        wall = time.monotonic() - start
    assert len(server.requests) == 2 and wall < 2
    assert all(r["path"].startswith("http://llm.invalid/v1/") for r in server.requests)


def _fake_resolver(monkeypatch, host: str, answer, delay: float = 0.0):
    """``socket.getaddrinfo`` answering ``answer`` (IPv4 addresses) for ``host`` after
    ``delay`` seconds, the real one for other names; returns the lists of lookups begun and
    of lookups answered."""
    import socket
    real, asked, answered = socket.getaddrinfo, [], []

    def getaddrinfo(name, port, *args, **kwargs):
        if name != host:
            return real(name, port, *args, **kwargs)
        asked.append(name)
        time.sleep(delay)
        answered.append(name)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answer]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked, answered


def test_a_resolver_that_does_not_answer_times_out_with_the_attempt(protocol, monkeypatch):
    # the C resolver's own timeouts are seconds per server and try; the lookup must end at the
    # attempt's 0.5 s like any other part of it, and the next attempt looks up again
    from restrictiveness.ai import clients
    asked, answered = _fake_resolver(monkeypatch, "slow-dns.test", ["127.0.0.1"], delay=5)
    waits, lookup = [], clients._lookup

    def timed_lookup(host, port, timeout):
        if host == "slow-dns.test":
            waits.append(timeout)
        return lookup(host, port, timeout)

    monkeypatch.setattr(clients, "_lookup", timed_lookup)
    with ChatServer(protocol, lambda body: "x") as server:
        port = server._server.server_address[1]
        url = server.base_url.replace(f"127.0.0.1:{port}", f"slow-dns.test:{port}")
        cls = rx.llm.OpenAIChat if protocol == "openai" else rx.llm.AnthropicChat
        llm = cls("gp-model", base_url=url, timeout=0.5, max_retries=1, **QUICK)
        adapter(server).chat([{"role": "user", "content": "hi"}])   # imports the SDK
        with pytest.raises(rx.llm.ClientError, match="APITimeoutError after 1 retry") as err:
            llm.chat([{"role": "user", "content": "hi"}])
        # the call (two attempts of 0.5 s) ended before the first lookup could answer (5 s)
        assert answered == []
    # and each lookup waited at most what was left of its attempt
    assert len(waits) == 2 and all(0 < w <= 0.5 for w in waits)
    assert err.value.retries == 1 and asked == ["slow-dns.test"] * 2
    assert len(server.requests) == 1


def test_every_address_of_a_host_is_tried_in_the_resolvers_order(protocol, monkeypatch):
    # nothing listens on 127.0.0.2 (the server binds 127.0.0.1): refused, then the next one
    import httpcore2 as httpcore  # the SDKs' HTTP library
    asked, _ = _fake_resolver(monkeypatch, "two-addresses.test", ["127.0.0.2", "127.0.0.1"])
    tried = []
    connect = httpcore.SyncBackend.connect_tcp

    def spy(self, host, *args, **kwargs):
        tried.append(host)
        return connect(self, host, *args, **kwargs)

    monkeypatch.setattr(httpcore.SyncBackend, "connect_tcp", spy)
    with ChatServer(protocol, lambda body: "found") as server:
        port = server._server.server_address[1]
        url = server.base_url.replace(f"127.0.0.1:{port}", f"two-addresses.test:{port}")
        cls = rx.llm.OpenAIChat if protocol == "openai" else rx.llm.AnthropicChat
        reply = cls("gp-model", base_url=url, timeout=5, max_retries=0).chat(
            [{"role": "user", "content": "hi"}])
    assert reply.text == "found" and asked == ["two-addresses.test"]
    assert tried == ["127.0.0.2", "127.0.0.1"]
    assert server.requests[0]["headers"]["Host"] == f"two-addresses.test:{port}"


def _compressed(data_blocks, encoding: str) -> bytes:
    import zlib
    c = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | (16 if encoding == "gzip" else 0))
    return b"".join(c.compress(block) for block in data_blocks) + c.flush()


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compressed_bomb_is_cut_off_once_decoded_in_bounded_memory(protocol, encoding,
                                                                      monkeypatch):
    import tracemalloc

    from restrictiveness.ai import clients
    monkeypatch.setattr(clients, "MAX_REPLY_BYTES", 2**20)
    bomb = _compressed([bytes(2**20)] * 64, encoding)  # 64 KiB that expand to 64 MiB
    assert len(bomb) < 2**17
    script = [("slow", 0), ("raw", 200, bomb, {"content-encoding": encoding})]
    with ChatServer(protocol, lambda body: "warm", script=script) as server:
        llm = adapter(server)
        assert llm.chat([{"role": "user", "content": "hi"}]).text == "warm"  # SDK imported
        tracemalloc.start()
        try:
            with pytest.raises(rx.llm.ClientError, match=f"ReplyTooLarge: the reply exceeds "
                                                         f"1048576 bytes once decoded "
                                                         f"\\({encoding}\\)") as err:
                llm.chat([{"role": "user", "content": "hi"}])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert len(server.requests) == 2 and err.value.retries == 0
    # the cap (1 MiB) and a few pieces of 64 KiB, not the 64 MiB the body expands to
    assert peak < 8 * 2**20


def test_compressed_replies_are_decoded_and_other_encodings_refused(protocol):
    def payload(text):
        return json.dumps(ChatServer(protocol, str).protocol_reply(
            {"messages": []}, {"text": text})).encode()
    script = [("raw", 200, _compressed([payload("zipped")], "gzip"), {"content-encoding": "gzip"}),
              ("raw", 200, _compressed([payload("raw deflate")], "deflate")[2:-4],
               {"content-encoding": "deflate"}),
              ("raw", 200, payload("brotli?"), {"content-encoding": "br"})]
    with ChatServer(protocol, lambda body: "unused", script=script) as server:
        llm = adapter(server)
        texts = [llm.chat([{"role": "user", "content": "hi"}]).text for _ in range(2)]
        with pytest.raises(rx.llm.ClientError, match="ReplyTooLarge: the reply is encoded as "
                                                     "br, which cannot be decoded") as err:
            llm.chat([{"role": "user", "content": "hi"}])
    assert texts == ["zipped", "raw deflate"] and err.value.retries == 0
    assert len(server.requests) == 3
    assert [{k.lower(): v for k, v in r["headers"].items()}["accept-encoding"]
            for r in server.requests] == ["gzip, deflate"] * 3


def test_a_reply_with_a_lone_surrogate_is_stored_and_run(protocol, tmp_path):
    # JSON admits "\udcff", which no file or hash can encode as UTF-8
    text = "Here \udcff is the program:\n```python\n" + MEAN_PROGRAM + "```\n"
    sample = Sample(np.arange(10.0).reshape(5, 2), np.arange(5.0), ("a", "b"))
    with ChatServer(protocol, lambda body: text) as server:
        proc = rx.Completion(adapter(server), cache=tmp_path, limits=LIMITS)
        rule = proc.fit(sample, np.random.default_rng(0))
        again = proc.fit(sample, np.random.default_rng(0))
    assert rule.info["reason"] is None and len(server.requests) == 1
    assert again.info["client_calls"] == 0 and rule.predict(sample.X[:2]).tolist() == [2.0, 2.0]
    cached = rx.llm.ResponseCache(tmp_path)
    assert len(cached) == 1 and "Here \ufffd is" in next(tmp_path.glob("*.json")).read_text(
        encoding="utf-8")


def test_a_tool_call_with_a_lone_surrogate_runs(protocol):
    sample = Sample(np.arange(10.0).reshape(5, 2), np.arange(5.0), ("a", "b"))
    call = {"id": "c1", "name": "run_python", "arguments": {"code": "print('\udcff')"}}
    script = iter([{"text": "", "tool_calls": [call]}, fenced(MEAN_PROGRAM)])
    with ChatServer(protocol, lambda body: next(script)) as server:
        rule = rx.Agent(adapter(server), rounds=2, limits=LIMITS).fit(
            sample, np.random.default_rng(0))
    assert len(server.requests) == 2 and rule.info["reason"] is None
    assert rule.info["tool_runs"] == [{"ok": True, "reason": None}]
    assert tool_results(server.requests[1]["body"])[0] == "Run finished.\n[output]\n\ufffd\n"


def test_a_call_budget_refuses_the_request_past_its_limit(protocol):
    hi = [{"role": "user", "content": "hi"}]
    budget = rx.llm.CallBudget(max_requests=3)
    with ChatServer(protocol, lambda body: "ok", script=[("status", 500)]) as server:
        llm = adapter(server, budget=budget)
        first = llm.chat(hi)  # a 500 and its retry: two requests
        second = llm.chat(hi)
        with pytest.raises(rx.llm.BudgetExhausted,
                           match="call budget used up: 3 of 3 requests sent") as err:
            llm.chat(hi)
    assert (first.retries, second.retries, err.value.retries) == (1, 0, 0)
    assert len(server.requests) == 3 == budget.requests
    # a retry is a request too: refused mid-call, after the one request the budget allowed
    with ChatServer(protocol, lambda body: "ok", script=[("status", 503)]) as server:
        with pytest.raises(rx.llm.BudgetExhausted, match="1 of 1 requests") as err:
            adapter(server, budget=rx.llm.CallBudget(max_requests=1)).chat(hi)
    assert len(server.requests) == 1 and err.value.retries == 1 and err.value.status is None


def test_a_token_budget_counts_reported_or_estimated_tokens(protocol):
    from restrictiveness.ai.budget import estimate_tokens
    hi = [{"role": "user", "content": "hi"}]
    with ChatServer(protocol, lambda body: "twelve chars") as server:
        probe = adapter(server).chat(hi)
        cost = probe.input_tokens + probe.output_tokens
        assert cost > 0
        for limit, allowed in ((2 * cost, 2), (2 * cost + 1, 3)):
            budget, done = rx.llm.CallBudget(max_tokens=limit), 0
            llm = adapter(server, budget=budget)
            with pytest.raises(rx.llm.BudgetExhausted, match=f"tokens used, the limit is "
                                                             f"{limit}"):
                for _ in range(5):
                    llm.chat(hi)
                    done += 1
            assert done == allowed and budget.tokens == allowed * cost
    # counts the endpoint does not report are estimated, not taken as free
    with ChatServer(protocol, lambda body: {"text": "no usage here"}) as server:
        payload = server.protocol_reply({"messages": []}, {"text": "no usage here"})
        payload.pop("usage")
        server.script = [("raw", 200, json.dumps(payload).encode())]
        budget = rx.llm.CallBudget(max_tokens=10**6)
        reply = adapter(server, budget=budget).chat(hi)
    assert reply.input_tokens is None and reply.output_tokens is None
    assert budget.tokens == estimate_tokens(json.dumps(hi)) + estimate_tokens(
        json.dumps(reply.message())) > 0


def test_a_call_budget_is_shared_by_threads_and_cache_hits_are_free(protocol, tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    budget = rx.llm.CallBudget(max_requests=5)
    with ChatServer(protocol, lambda body: "ok", delay=0.05) as server:
        llm = adapter(server, budget=budget)

        def ask(i):
            try:
                return llm.chat([{"role": "user", "content": f"question {i}"}]).text
            except rx.llm.BudgetExhausted:
                return "refused"
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(ask, range(8)))
    assert sorted(answers) == ["ok"] * 5 + ["refused"] * 3 and len(server.requests) == 5
    # with a reply cache, a fit whose reply is cached makes no request and costs nothing
    samples = [Sample(np.arange(10.0).reshape(5, 2) + i, np.arange(5.0), ("a", "b"))
               for i in range(2)]
    budget = rx.llm.CallBudget(max_requests=1)
    with ChatServer(protocol, lambda body: fenced(MEAN_PROGRAM)) as server:
        proc = rx.Completion(adapter(server, budget=budget), cache=tmp_path, limits=LIMITS,
                             run_at_fit=False)
        fits = [proc.fit(samples[i], np.random.default_rng(0)) for i in (0, 0, 1)]
    assert len(server.requests) == 1 == budget.requests
    assert [f.info["reason"] for f in fits] == [None, None, "client"]
    assert [f.info["usage"]["calls"] for f in fits] == [1, 0, 0]
    assert fits[1].info["usage"]["cached_calls"] == 1
    assert "call budget used up: 1 of 1 requests sent" in fits[2].info["message"]


def test_a_call_budget_does_not_travel_to_worker_processes(protocol):
    with ChatServer(protocol, lambda body: "ok") as server:
        llm = adapter(server, budget=rx.llm.CallBudget(max_requests=10))
        study = gp_study({"Completion": rx.Completion(llm, limits=LIMITS)})
        with pytest.raises(ConfigurationError,
                           match="CallBudget counts in one process.*concurrency=N"):
            study.run(n_jobs=2)
        assert len(server.requests) == 0


def test_missing_key_for_the_provider_endpoint_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    llm = rx.llm.OpenAIChat("gpt-x")
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        llm.check_api_key()
    with pytest.raises(rx.llm.ClientError, match="no API key"):
        llm.chat([{"role": "user", "content": "hi"}])
    with pytest.raises(ConfigurationError, match="base_url"):
        rx.llm.OpenAIChat("m", base_url="localhost:8000")
    with pytest.raises(ConfigurationError, match="extra_body"):
        rx.llm.OpenAIChat("m", extra_body={"f": object()})


# ------------------------------------------------------------------------ studies


def _agent_reply(body):
    """Native tools: look at the data once, then return the GP program; at once otherwise
    (marked final for the text protocol)."""
    if body.get("tools") and not tool_results(body):
        return {"text": "Let me look at the data.",
                "tool_calls": [{"id": "call_1", "name": "run_python", "arguments": {
                    "code": "import numpy as np\nprint('shape', np.load('y_train.npy').shape)"}}]}
    return "FINAL PROGRAM\n" + fenced(GP_PROGRAM)


def test_completion_and_agent_through_the_adapters_match_gp_regression(protocol):
    with ChatServer(protocol, _agent_reply) as server:
        llm = adapter(server)
        procs = {"Completion": rx.Completion(llm, limits=LIMITS),
                 "Agent": rx.Agent(llm, limits=LIMITS),
                 "Agent (text)": rx.Agent(llm, limits=LIMITS, tool_protocol="text")}
        res = gp_study(procs).run(progress=False)
    for label in procs:
        ours, gp = gp_losses(res, label)
        np.testing.assert_allclose(ours, gp, rtol=1e-6)
    assert int(res.dataset["failed"].sum()) == 0
    info = json.loads(str(res.dataset["fit_info"].sel(procedure="Agent").values[0, 0]))
    assert info["tool_protocol"] == "native" and info["rounds_used"] == 1
    assert info["client_calls"] == 2 and info["tool_runs"] == [{"ok": True, "reason": None}]
    text_info = json.loads(str(res.dataset["fit_info"].sel(procedure="Agent (text)").values[0, 0]))
    assert text_info["tool_protocol"] == "text" and text_info["rounds_used"] == 0
    # the tool ran in the sandbox and its output went back as a tool result
    second = [r["body"] for r in server.requests if r["body"].get("tools") and
              tool_results(r["body"])]
    assert len(second) == 2 and "shape (20,)" in tool_results(second[0])[0]
    assert [t.get("name") or t["function"]["name"] for t in second[0]["tools"]] == ["run_python"]
    # usage: every request's tokens as the server counted them
    usage = res.usage()
    assert int(usage["calls"].sum()) == len(server.requests) == 2 + 4 + 2
    assert int(usage["input_tokens"].sum()) == sum(input_tokens(r["body"])
                                                   for r in server.requests)
    assert usage.loc[("Agent", 20), "calls"] == 4 and usage.loc[("Completion", 20), "fits"] == 2


def test_agent_native_round_budget(protocol):
    def always_tools(body):
        calls = [{"id": f"c{i}", "name": "run_python", "arguments": {"code": "print(1)"}}
                 for i in range(2)]
        choice = body.get("tool_choice")
        if choice in ("none", {"type": "none"}):
            return fenced(GP_PROGRAM)
        return {"text": "", "tool_calls": calls}

    sample = gp_study({}).evaluation.draw([20], np.random.default_rng(0)).sample(20, 0)
    with ChatServer(protocol, always_tools) as server:
        agent = rx.Agent(adapter(server), rounds=3, limits=LIMITS, record_transcript=True)
        rule = agent.fit(sample, np.random.default_rng(1))
    bodies = [r["body"] for r in server.requests]
    choices = [b.get("tool_choice") for b in bodies]
    none = "none" if protocol == "openai" else {"type": "none"}
    auto = "auto" if protocol == "openai" else {"type": "auto"}
    assert choices == [auto, auto, none]          # 2 + 1 runs, then tools disabled
    assert rule.info["rounds_used"] == 3 and rule.info["hit_limit"]
    results = tool_results(bodies[-1])
    assert results.count("Not run: the tool budget is used up.") == 1 and len(results) == 4
    assert rule.info["reason"] is None
    assert rule.info["transcript"][-1]["role"] == "assistant"


class _ThinkingServer(ChatServer):
    """An Anthropic endpoint with thinking on: each reply opens with a signed thinking block,
    and, as the API does, a request whose assistant turn calls a tool without its thinking
    blocks first is refused (HTTP 400)."""

    def protocol_reply(self, body, out):
        payload = super().protocol_reply(body, out)
        payload["content"] = [{"type": "thinking", "thinking": "Look first.",
                               "signature": f"sig-{len(self.requests)}"},
                              {"type": "redacted_thinking", "data": "opaque"},
                              *payload["content"]]
        return payload


def test_anthropic_thinking_blocks_go_back_with_their_tool_calls():
    """With thinking on (extra_body={"thinking": ...}, the AnthropicChat docstring's example)
    the Messages API requires a tool-calling turn's thinking blocks back, signed, in the next
    request. They were dropped, so a native-tool agent's second request was refused with
    HTTP 400 and every fit failed with reason 'client'."""
    def refuse_without_thinking(body):
        for m in body["messages"]:
            kinds = [b["type"] for b in m["content"]] if m["role"] == "assistant" else []
            if "tool_use" in kinds and kinds[:2] != ["thinking", "redacted_thinking"]:
                return {"text": "REFUSED"}  # (the server's status is fixed; the test fails)
        return _agent_reply(body)

    sample = gp_study({}).evaluation.draw([20], np.random.default_rng(0)).sample(20, 0)
    with _ThinkingServer("anthropic", refuse_without_thinking) as server:
        llm = adapter(server, extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024}})
        rule = rx.Agent(llm, limits=LIMITS, run_at_fit=False).fit(sample,
                                                                   np.random.default_rng(1))
    assert rule.info["reason"] is None and rule.info["rounds_used"] == 1
    second = server.requests[1]["body"]["messages"]
    assert second[1]["role"] == "assistant" and second[1]["content"][:2] == [
        {"type": "thinking", "thinking": "Look first.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"}]
    assert [b["type"] for b in second[1]["content"][2:]] == ["text", "tool_use"]
    reply = rx.llm.ChatReply("x", thinking=({"type": "redacted_thinking", "data": "d"},))
    assert rx.llm.ChatReply.from_json(json.loads(json.dumps(reply.to_json()))) == reply


def test_a_tool_call_whose_input_is_no_object_is_answered_not_run(protocol):
    """A tool call with arguments that are no JSON object is answered "Not run" and the
    Agent goes on, in both protocols. Before, an Anthropic tool_use whose input was a string
    failed the whole fit as a malformed reply (reason "client")."""
    def reply(body):
        if not tool_results(body):
            return {"text": "", "tool_calls": [{"id": "c1", "name": "run_python",
                                                "arguments": "print(1)"}]}
        return fenced(GP_PROGRAM, final=True)

    sample = gp_study({}).evaluation.draw([20], np.random.default_rng(0)).sample(20, 0)
    with ChatServer(protocol, reply) as server:
        rule = rx.Agent(adapter(server), rounds=3, limits=LIMITS).fit(
            sample, np.random.default_rng(1))
    assert rule.info["reason"] is None and len(server.requests) == 2
    assert tool_results(server.requests[1]["body"]) == [
        "Not run: call the run_python tool with a string argument 'code'."]


def test_openai_tool_arguments_sent_as_an_object_are_run():
    """A compatible server sending a tool call's arguments as the JSON object itself (Hugging
    Face's TGI), not as the JSON text the API specifies: every native agent fit failed as a
    malformed reply (reason "client"). The object is now read as the arguments."""
    def reply(body):
        return fenced(GP_PROGRAM, final=True)

    with ChatServer("openai", reply) as server:
        payload = server.protocol_reply({"messages": []}, {"text": ""})
        payload["choices"][0]["message"]["tool_calls"] = [
            {"id": "c1", "type": "function",
             "function": {"name": "run_python", "arguments": {"code": "print(6 * 7)"}}}]
        server.script = [("raw", 200, json.dumps(payload).encode())]
        direct = adapter(server).chat([{"role": "user", "content": "hi"}])
        server.script = [("raw", 200, json.dumps(payload).encode())]
        sample = gp_study({}).evaluation.draw([20], np.random.default_rng(0)).sample(20, 0)
        rule = rx.Agent(adapter(server), rounds=3, limits=LIMITS).fit(
            sample, np.random.default_rng(1))
    assert direct.tool_calls == (rx.llm.ToolCall("c1", "run_python", {"code": "print(6 * 7)"}),)
    assert rule.info["reason"] is None and rule.info["rounds_used"] == 1
    assert tool_results(server.requests[2]["body"]) == ["Run finished.\n[output]\n42\n"]
    # the call goes back to the endpoint as the API specifies: arguments as JSON text
    sent = server.requests[2]["body"]["messages"][1]["tool_calls"][0]["function"]
    assert json.loads(sent["arguments"]) == {"code": "print(6 * 7)"}


@pytest.mark.parametrize(("tool_calls", "said"), [
    ({"id": "c1", "type": "function", "function": {"name": "run_python", "arguments": "{}"}},
     "the reply's tool_calls is a dict, not a list"),
    ([{"id": "c1", "type": "custom", "custom": {"name": "run_python", "input": "print(1)"}}],
     "a tool call of the reply is not a function call"),
])
def test_openai_tool_calls_the_adapter_cannot_read_are_a_malformed_reply(tool_calls, said):
    """A tool_calls object instead of a list, or a call that is not a function call, read as a
    reply with no call and no text: an empty answer, with nothing said."""
    with ChatServer("openai", lambda body: "x") as server:
        payload = server.protocol_reply({"messages": []}, {"text": ""})
        payload["choices"][0]["message"]["tool_calls"] = tool_calls
        server.script = [("raw", 200, json.dumps(payload).encode())]
        with pytest.raises(rx.llm.ClientError, match=f"malformed reply \\({said}\\)"):
            adapter(server, max_retries=3).chat([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1  # not retried: the same server would send the same


@pytest.mark.parametrize(("provider", "body"), [
    ("openai", {"error": {"message": "model overloaded, try later", "code": 503}}),
    ("anthropic", {"type": "error", "error": {"type": "overloaded_error",
                                              "message": "model overloaded, try later"}}),
])
def test_an_error_sent_with_status_200_is_reported_by_its_message(provider, body):
    """The message said "no choices" and showed the SDK object's repr."""
    with ChatServer(provider, lambda b: "x") as server:
        server.script = [("raw", 200, json.dumps(body).encode())]
        with pytest.raises(rx.llm.ClientError, match=r"malformed reply \(the endpoint answered "
                                                     r"with an error: model overloaded, try "
                                                     r"later\)"):
            adapter(server, max_retries=1).chat([{"role": "user", "content": "hi"}])


def test_failing_endpoint_gives_counted_client_failures():
    with ChatServer("openai", lambda body: "x", fail_with=500) as server:
        llm = adapter(server, max_retries=2)
        with pytest.warns(rx.FailureWarning):
            res = gp_study({"Completion": rx.Completion(llm, limits=LIMITS),
                            "Agent": rx.Agent(llm, limits=LIMITS)}).run(progress=False)
    assert len(server.requests) == 2 * 2 * 3          # fits x procedures x attempts
    ds = res.dataset
    base = ds["baseline_loss"].sel(discrepancy="mse").values
    for label in ("Completion", "Agent"):
        assert ds["failed"].sel(procedure=label).values.tolist() == [[1, 1]]
        np.testing.assert_array_equal(ds["loss"].sel(procedure=label, discrepancy="mse"), base)
        info = json.loads(str(ds["fit_info"].sel(procedure=label).values[0, 0]))
        assert info["reason"] == "client" and info["usage"]["failed_calls"] == 1
        assert info["usage"]["retries"] == 2 and info["calls"][0]["status"] == 500
        assert "client: openai gp-model" in str(ds["error"].sel(procedure=label).values[0, 0])
    assert res.usage()["failed_calls"].sum() == 4


def test_a_cached_agent_rerun_asks_nothing_of_a_server_giving_tool_calls_no_id(tmp_path):
    """A server that leaves out tool-call ids (null ids): the cache stored the id None and
    read it back as the text "None", so the rerun's next request (quoting it) missed the cache
    and was sent again (1 of the agent's 2 calls)."""
    class NoIds(ChatServer):
        def protocol_reply(self, body, out):
            payload = super().protocol_reply(body, out)
            for call in payload["choices"][0]["message"].get("tool_calls") or ():
                del call["id"]
            return payload

    def reply(body):
        if not tool_results(body):
            return {"text": "", "tool_calls": [{"id": "-", "name": "run_python",
                                                "arguments": {"code": "print(1)"}}]}
        return fenced(GP_PROGRAM, final=True)

    sample = gp_study({}).evaluation.draw([20], np.random.default_rng(0)).sample(20, 0)
    with NoIds("openai", reply) as server:
        rules = [rx.Agent(adapter(server), rounds=3, limits=LIMITS, cache=tmp_path).fit(
            sample, np.random.default_rng(1)) for _ in range(2)]
    assert [r.info["usage"]["calls"] for r in rules] == [2, 0] and len(server.requests) == 2
    assert rules[1].info["usage"]["cached_calls"] == 2 and rules[1].info["reason"] is None
    assert tool_results(server.requests[1]["body"]) == ["Run finished.\n[output]\n1\n"]
    call = rx.llm.ChatReply("", (rx.llm.ToolCall(None, None, {"code": "x"}),))
    assert rx.llm.ChatReply.from_json(call.to_json()) == call


def test_cached_rerun_makes_no_requests_and_models_never_share_entries(protocol, tmp_path):
    def by_model(body):
        return fenced(GP_PROGRAM if body["model"] == "gp-model" else MEAN_PROGRAM)

    cache = tmp_path / "replies"
    with ChatServer(protocol, by_model) as server:
        gp = adapter(server, "gp-model")
        first = gp_study({"C": rx.Completion(gp, limits=LIMITS, cache=cache)}).run(
            progress=False)
        made = len(server.requests)
        again = gp_study({"C": rx.Completion(gp, limits=LIMITS, cache=cache)}).run(
            progress=False)
        assert made == 2 and len(server.requests) == made            # zero HTTP requests
        np.testing.assert_array_equal(first.dataset["loss"], again.dataset["loss"])
        assert again.usage().loc[("C", 20), "cached_calls"] == 2
        assert again.usage().loc[("C", 20), "calls"] == 0
        # same messages, another model: its own requests and its own replies
        other = gp_study({"C": rx.Completion(adapter(server, "mean-model"), limits=LIMITS,
                                             cache=cache)}).run(progress=False)
        assert len(server.requests) == made + 2
        warm = gp_study({"C": rx.Completion(adapter(server, "gp-model", temperature=0.0),
                                            limits=LIMITS, cache=cache)}).run(progress=False)
        assert len(server.requests) == made + 4                    # a temperature is a key
    ours, gp_loss = gp_losses(first, "C")
    np.testing.assert_allclose(ours, gp_loss, rtol=1e-6)
    np.testing.assert_array_equal(warm.dataset["loss"], first.dataset["loss"])
    assert not np.allclose(gp_losses(other, "C")[0], ours)           # the mean, not the GP
    assert len(rx.ResponseCache(cache)) == 6


# ------------------------------------------------------------------------ concurrency


class AskedMean(Procedure):
    """An I/O-bound procedure with no sandbox: asks the endpoint for the sample mean."""

    io_bound = True
    label = "asked mean"

    def __init__(self, client):
        self.client = client

    def fit(self, sample, rng):
        reply = self.client.chat([{"role": "user", "content": json.dumps(
            np.round(sample.y, 10).tolist())}])
        value = float(reply.text)
        return FunctionRule(lambda X: np.full(len(X), value),
                            info={"usage": {"calls": 1, "input_tokens": reply.input_tokens}})


def _mean_reply(body):
    content = body["messages"][-1]["content"]
    return repr(float(np.mean(json.loads(content))))


def test_concurrency_gives_identical_results_and_is_faster():
    with ChatServer("openai", _mean_reply, delay=0.5) as server:
        study = gp_study({"asked": AskedMean(adapter(server, "mean-model")),
                          "constant": rx.Constant()}, replications=16)
        start = time.perf_counter()
        serial = study.run(progress=False, concurrency=1)
        t_serial = time.perf_counter() - start
        start = time.perf_counter()
        threaded = study.run(progress=False, concurrency=8)
        t_threaded = time.perf_counter() - start
    for var in ("loss", "baseline_loss", "failed", "invalid", "fit_info", "error"):
        np.testing.assert_array_equal(serial.dataset[var].values, threaded.dataset[var].values)
    assert int(serial.dataset["failed"].sum()) == 0 and len(server.requests) == 2 * 16
    # the rule is the sample mean the server computed: the built-in Constant's losses
    loss = threaded.dataset["loss"]
    np.testing.assert_allclose(loss.sel(procedure="asked"), loss.sel(procedure="constant"),
                               rtol=1e-6)
    print(f"serial {t_serial:.2f} s, concurrency=8 {t_threaded:.2f} s")
    # 16 requests of 0.5 s a run: 8 s of waiting serially, 1 s eight at a time; the computing
    # is the same in both runs, so the difference is the waiting saved, however loaded the
    # machine (before, a loaded machine's 11.0 s against 2.9 s failed a 5x speed-up test)
    assert t_serial >= 16 * 0.5 and t_serial - t_threaded >= 0.75 * (8 - 1), (t_serial, t_threaded)


def test_concurrent_language_model_studies_equal_serial_ones(tmp_path):
    """Completion and Agent on threads beside CPU procedures on a process pool, with a
    checkpoint: the same Dataset as the plain serial run."""
    with ChatServer("openai", _agent_reply, delay=0.05) as server:
        llm = adapter(server)
        procs = {"Completion": rx.Completion(llm, limits=LIMITS),
                 "Agent": rx.Agent(llm, limits=LIMITS),
                 "CPT(alpha)": rx.lottery.CPT(free=("alpha",))}
        study = gp_study(procs, replications=3)
        serial = study.run(progress=False)
        mixed = study.run(progress=False, n_jobs=2, concurrency=4,
                          checkpoint=tmp_path / "ck")
    for var in ("loss", "baseline_loss", "failed", "invalid", "error"):
        np.testing.assert_array_equal(serial.dataset[var].values, mixed.dataset[var].values)
    strip = re.compile(r'"(seconds|latency)": [0-9.e-]+')
    for a, b in zip(serial.dataset["fit_info"].values.ravel(),
                    mixed.dataset["fit_info"].values.ravel(), strict=True):
        assert strip.sub("", str(a)) == strip.sub("", str(b))
    ours, gp = gp_losses(mixed, "Agent")
    np.testing.assert_allclose(ours, gp, rtol=1e-6)


def test_sandboxed_programs_on_a_runs_threads_run_no_more_at_once_than_cpus(monkeypatch):
    """Fits on a run's I/O threads ran their programs all at once: at concurrency=8 on 2 cores
    every program sharing a quarter of a core, their wall-clock limit failed all 8 fits that
    a serial run completes. Programs now take one of the slots, one per usable CPU (2 here),
    and their wall clock starts with it."""
    import threading

    from restrictiveness.ai.sandbox import run_python, runner

    assert runner._SLOTS._value == len(os.sched_getaffinity(0))   # one per usable CPU
    monkeypatch.setattr(runner, "_SLOTS", threading.BoundedSemaphore(2), raising=False)
    spans = []

    def one():
        result = run_python("import time\nprint(time.time())\ntime.sleep(1.5)\n"
                            "print(time.time())", limits=LIMITS)
        spans.append([float(t) for t in result.stdout.split()])

    threads = [threading.Thread(target=one) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(spans) == 5 and all(b - a >= 1.5 for a, b in spans)
    # the most programs running at any one start: at most 2, not up to 5
    assert max(sum(a <= start < b for a, b in spans) for start, _ in spans) <= 2


def test_requests_per_minute_spaces_requests(monkeypatch):
    from restrictiveness.ai import clients

    asked, granted = [], []

    def recorded_slot():
        asked.append(time.monotonic())
        request_slot()
        granted.append(time.monotonic())

    request_slot = clients.request_slot
    monkeypatch.setattr(clients, "request_slot", recorded_slot)
    with ChatServer("openai", _mean_reply) as server:
        study = gp_study({"asked": AskedMean(adapter(server, "mean-model"))}, replications=4)
        study.run(progress=False, concurrency=4, requests_per_minute=300)   # 0.2 s apart
        # The k-th slot is 0.2 k s after the first was asked for at the earliest, and a request
        # goes on no earlier than its slot: a thread that runs late only goes on later, so this
        # holds at any load. Unlimited, all 4 would go on within milliseconds of being asked.
        # (Arrivals at the server were checked before; each request is late there by its own
        # set-up, and under load they came 0.02 s apart after a first one 0.5 s late.)
        assert len(granted) == 4 and len(server.times) == 4
        np.testing.assert_array_less(0.2 * np.arange(4) - 1e-3,
                                     np.array(sorted(granted)) - min(asked))
        with pytest.raises(ConfigurationError, match="requests_per_minute"):
            study.run(progress=False, n_jobs=2, requests_per_minute=300)
    with pytest.raises(ConfigurationError, match="concurrency"):
        study.run(progress=False, concurrency=0)


class Chatty(Procedure):
    """An I/O-bound procedure that talks long: ``turns`` requests (an agent's conversation)."""

    io_bound = True
    label = "chatty"

    def __init__(self, client, turns):
        self.client, self.turns = client, turns

    def fit(self, sample, rng):
        for _ in range(self.turns):
            self.client.chat([{"role": "user", "content": "[1.0]"}])
        return FunctionRule(lambda X: np.full(len(X), 1.0))


class ChattyCallable(Procedure):
    """An I/O-bound procedure asking a plain callable client ``turns`` times (through
    ``call_client``, as the package's procedures ask any client)."""

    io_bound = True

    def __init__(self, client, turns):
        self.client, self.turns = client, turns

    def fit(self, sample, rng):
        from restrictiveness.ai.clients import call_client
        for _ in range(self.turns):
            call_client(self.client, [{"role": "user", "content": "[1.0]"}])
        return FunctionRule(lambda X: np.full(len(X), 1.0))


def _interrupted_chatty_run(send_interrupt) -> list:
    """Run two 1000-turn conversations of a plain callable client (20 ms a call) with
    ``concurrency=2``; a thread calls ``send_interrupt()`` once 10 calls were made, and the run
    must raise ``KeyboardInterrupt``. Returns the list that grows by one per call, so a caller
    can see whether calls go on afterwards."""
    import threading

    calls = []

    def client(messages):
        calls.append(1)
        time.sleep(0.02)
        return "[1.0]"

    # 1000 turns each: 20 s before the first conversation ends, the first event
    study = gp_study({"chatty": ChattyCallable(client, turns=1000)}, replications=2)

    def interrupt_mid_conversation():
        while len(calls) < 10:
            time.sleep(0.01)
        send_interrupt()

    threading.Thread(target=interrupt_mid_conversation, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        study.run(progress=False, concurrency=2)
    return calls


def test_fits_asking_a_plain_callable_stop_at_their_next_call_once_the_run_is_interrupted(
        ctrl_c_raises):
    """A plain callable client (``client(messages) -> str``) has no retry loop of its own: the
    run's stop reaches its fits through the rate-limit slot each call takes, even without a
    rate limit."""
    import os

    calls = _interrupted_chatty_run(lambda: os.kill(os.getpid(), signal.SIGINT))
    sent = len(calls)
    time.sleep(1.0)  # about 50 more calls each, were they still running
    assert len(calls) - sent <= 2 and sent < 1000


def test_an_interrupt_handled_on_another_thread_stops_a_threaded_run_at_once(ctrl_c_raises):
    """The kernel gives a process's SIGINT to any of its threads that does not block it. When
    the handler ran on another thread than the main one, it only flagged the interrupt, and the
    main thread, waiting for the fits' events without a timeout, saw it at the next event, the
    end of a whole conversation: a conversation test under load had 1,993 of its 2,000 requests
    sent before the interrupt surfaced. Here the signal is sent to the interrupting thread
    itself, so that its handler runs there."""
    import threading

    calls = _interrupted_chatty_run(
        lambda: signal.pthread_kill(threading.get_ident(), signal.SIGINT))
    assert len(calls) < 1000  # before: not before a conversation had ended


def test_fits_on_threads_stop_at_their_next_request_once_the_run_is_interrupted(ctrl_c_raises):
    """Ctrl-C (or an error) in a run left the fits on its threads running unseen: an agent's
    conversation went on to its last turn, and the interpreter waited for it at exit. They now
    end at their next request."""
    import os
    import signal
    import threading

    with ChatServer("openai", _mean_reply, delay=0.02) as server:
        # 1000 turns: 20 s a conversation, far beyond the interrupt's latency on a loaded
        # machine (seconds at load 7, where 150 turns had all but ended before it)
        study = gp_study({"chatty": Chatty(adapter(server), turns=1000)}, replications=2)

        def interrupt_mid_conversation():
            while len(server.requests) < 10:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt_mid_conversation, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            study.run(progress=False, concurrency=2)
        sent = len(server.requests)
        time.sleep(1.0)  # about 50 more turns each, were they still running
        assert len(server.requests) - sent <= 2 and sent < 1000


def _io_threads_after_ctrl_c(study, started) -> float:
    """Seconds from a Ctrl-C in ``study.run(concurrency=2)`` (sent once ``started()``) until
    none of the run's I/O threads is left (at most 20)."""
    import os
    import threading

    def interrupt():
        while not started():
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        study.run(progress=False, concurrency=2)
    stopped = time.monotonic()
    while any(t.name.startswith("rx-io") for t in threading.enumerate()) and \
            time.monotonic() - stopped < 20:
        time.sleep(0.05)
    return time.monotonic() - stopped


def test_a_request_in_flight_ends_once_the_run_is_interrupted(ctrl_c_raises):
    """A fit on a run's thread blocked in its request (a slow endpoint) went on waiting for the
    reply, or for the attempt's timeout (120 s by default, 600 s for Anthropic), after Ctrl-C,
    and the interpreter's exit waited for it (measured: 33 s for a reply 40 s away). The
    run's stop now shuts the attempt's socket down."""
    with ChatServer("openai", _mean_reply, delay=30) as server:
        llm = adapter(server, "mean-model", timeout=60, max_retries=0)
        study = gp_study({"asked": AskedMean(llm)}, replications=2)
        seconds = _io_threads_after_ctrl_c(study, lambda: len(server.requests) == 2)
    assert seconds < 2.0, seconds


def test_a_program_running_ends_once_the_run_is_interrupted(ctrl_c_raises):
    """A Completion fit on a run's thread ran its program to its end (up to its wall limit,
    600 s by default) after Ctrl-C, and the interpreter's exit waited for it (measured: 94 s,
    for a program that sleeps 50 s and is run twice). The sandbox now stops it."""
    program = "import time\ntime.sleep(30)\n" + MEAN_PROGRAM
    with ChatServer("openai", lambda body: fenced(program)) as server:
        study = gp_study({"C": rx.Completion(adapter(server), limits=LIMITS)},
                         replications=2)
        asked = time.monotonic()
        # the programs have started, or are about to: either way they must not run on
        seconds = _io_threads_after_ctrl_c(
            study, lambda: len(server.requests) == 2 and time.monotonic() - asked > 3)
    assert seconds < 2.0, seconds


def test_a_stopped_runs_fit_counts_no_request_against_its_budget():
    # the budget counted a request (its message says "sent") that the stop then refused
    import threading

    from restrictiveness.ai.clients import CallBudget
    from restrictiveness.engine import concurrency

    budget = CallBudget(max_requests=10)
    llm = rx.llm.OpenAIChat("m", base_url="http://127.0.0.1:9/v1", api_key="k", budget=budget)
    stop = threading.Event()
    stop.set()
    token = concurrency._STOP.set(stop)
    try:
        with pytest.raises(concurrency.RunStopped):
            llm.chat([{"role": "user", "content": "hi"}])
    finally:
        concurrency._STOP.reset(token)
    assert budget.requests == 0


def test_a_process_forked_from_a_runs_thread_makes_requests_of_its_own():
    """A pool worker forked by a run's CPU thread inherited the run's stop event: with another
    thread inside its wait() at the fork, the event's lock stayed held and the worker's first
    request waited for ever."""
    import os
    import threading

    from forking import held_by_another_thread

    from restrictiveness.engine import concurrency

    stop = threading.Event()
    token = concurrency._STOP.set(stop)
    try:
        with held_by_another_thread(stop._cond):
            pid = os.fork()
            if pid == 0:  # the child: a request, then exit 0
                try:
                    signal.alarm(5)
                    concurrency.request_slot()
                    os._exit(0)
                finally:
                    os._exit(1)
        concurrency.request_slot()  # the caller's thread still sees its (unset) stop
    finally:
        concurrency._STOP.reset(token)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # not killed by the alarm


def test_a_back_off_wait_ends_once_the_run_has_failed():
    """A fit waiting out a Retry-After (up to 300 s) slept on after the run failed, and the
    interpreter waited for it at exit."""
    from restrictiveness.engine.concurrency import run_with_threads

    ended = {}

    def run_task(m, key):
        if m == 0:  # fails once the other fit waits out its Retry-After
            while not server.requests:
                time.sleep(0.01)
            time.sleep(0.2)
            raise RuntimeError("a failure elsewhere in the run")
        try:
            adapter(server).chat([{"role": "user", "content": "[1.0]"}])
        finally:
            ended[m] = time.monotonic()

    with ChatServer("openai", _mean_reply,
                    script=[("status", 503, {"Retry-After": "30"})]) as server:
        with pytest.raises(RuntimeError, match="elsewhere"):
            run_with_threads([0, 1], lambda m: ["fit"], run_task, lambda m, o, c: o,
                             lambda m, r: None, threads=2)
        failed = time.monotonic()
        time.sleep(0.5)
    assert 1 in ended and ended[1] - failed < 0.5  # not 30 s


@pytest.mark.parametrize("bad", [True, "60", float("inf"), float("nan"), 0, -5])
def test_requests_per_minute_must_be_a_positive_finite_number(bad):
    """True was one request a minute; a string or infinity went through unchecked."""
    llm = rx.llm.OpenAIChat("mean-model", base_url="http://127.0.0.1:9/v1", timeout=1)
    study = gp_study({"asked": AskedMean(llm)})
    with pytest.raises(ConfigurationError,
                       match=rf"requests_per_minute must be a positive, finite number "
                             rf"\(None: no limit\), got {re.escape(repr(bad))}"):
        study.run(progress=False, concurrency=4, requests_per_minute=bad)


# ------------------------------------------------------------------------ picklability


def test_unpicklable_procedure_is_refused_before_any_work(tmp_path):
    calls = []

    def client(messages):
        calls.append(1)
        return fenced(GP_PROGRAM)

    lam = rx.Completion(lambda m: client(m), model="lambda-model", limits=LIMITS)
    study = gp_study({"by lambda": lam})
    for kwargs in ({"n_jobs": 2}, {"backend": "dask"}):
        with pytest.raises(ConfigurationError, match="procedure 'by lambda' cannot be pickled"):
            study.run(progress=False, checkpoint=tmp_path / "ck", **kwargs)
    assert calls == [] and not (tmp_path / "ck").exists()
    # on threads in this process it needs no pickling, beside a process pool
    res = study.run(progress=False, n_jobs=2, concurrency=2)
    ours, gp = gp_losses(res, "by lambda")
    np.testing.assert_allclose(ours, gp, rtol=1e-6)
    assert len(calls) == 2


# ------------------------------------------------------------------------ command line


def test_table_2_command_line(tmp_path, capsys):
    cache = tmp_path / "cache"
    with ChatServer("openai", _agent_reply) as server:
        argv = ["replicate", "lottery", "--llm", "openai:gp-model", "--base-url",
                server.base_url, "--agent", "--prompts", "neutral", "econometrician",
                "-M", "2", "--n", "100", "--only", "GP regression", "--jobs", "1",
                "--no-progress", "--cache", str(cache), "--price", "1", "4"]
        assert main([*argv, "--dry-run"]) == 0
        dry = capsys.readouterr().out
        assert not server.requests
        assert re.search(r"model calls: 8 to 88 \(0 fits answered by the cache\)", dry)
        assert main(argv) == 0
        out = capsys.readouterr().out
        made = len(server.requests)
        assert made == 2 * 2 + 2 * 2 * 2                  # completions 1, agents 2 per fit
        assert main([*argv, "--dry-run"]) == 0
        # cached: no completion call; an agent's later turns are not known in advance
        assert "model calls: 0 to 80 (8 fits answered by the cache)" in capsys.readouterr().out
        assert main(argv) == 0 and len(server.requests) == made      # all from the cache
        rerun = capsys.readouterr().out
    usage = [line for line in out.splitlines() if line.startswith("total:")][0]
    tokens_in = sum(input_tokens(r["body"]) for r in server.requests)
    assert f"total: {made} calls (0 cached, 0 retries), {tokens_in:,} input" in usage
    # the cost by hand, at $1 and $4 per million: a few cents, printed in cents before
    tokens_out = int(re.search(r"and ([\d,]+) output tokens", usage)[1].replace(",", ""))
    cost = (tokens_in * 1 + tokens_out * 4) / 1e6
    assert 0.001 < cost < 0.995 and usage.endswith(f"output tokens, ${cost:.4f}"), (usage, cost)
    assert re.search(r"^Agent \(econometrician\)\s+100\s+2\s+4", out, re.M)
    assert re.search(r"^Completion\s.*/ 0\.328, z=[+-]\d", out, re.M)        # Table A.3
    assert re.search(r"^Completion \(econometrician\)\s.*/ 0\.277, z=[+-]\d", out, re.M)  # A.7
    assert "total: 0 calls (12 cached" in rerun


def test_a_dry_run_counts_only_what_a_checkpoint_leaves_to_compute(tmp_path, capsys):
    """A dry run given --checkpoint counted every replication: 3 calls for a resumed run that
    made none. It now counts those the checkpoint does not hold, and creates nothing."""
    ck = tmp_path / "ck"
    with ChatServer("openai", lambda body: fenced(GP_PROGRAM)) as server:
        argv = ["replicate", "lottery", "--llm", "openai:gp-model", "--base-url",
                server.base_url, "-M", "3", "--n", "20", "--only", "GP regression",
                "--jobs", "1", "--no-progress", "--checkpoint", str(ck)]

        def dry() -> str:
            assert main([*argv, "--dry-run"]) == 0
            return capsys.readouterr().out

        before = dry()
        assert "model calls: 3 to 3 " in before and not ck.exists()
        assert main(argv) == 0 and len(server.requests) == 3
        capsys.readouterr()
        after = dry()
        assert "model calls: 0 to 0 " in after
        assert "Dry run: 3 of 3 replications to compute, n = [20]" in before
        assert "Dry run: 0 of 3 replications to compute (3 finished in the checkpoint)" in after
        (ck / "replication-000001.npz").unlink()
        assert "model calls: 1 to 1 " in dry()
        assert main(argv) == 0 and len(server.requests) == 4   # the one the dry run counted


def test_a_price_that_cannot_price_every_model_loses_no_paid_run(tmp_path, capsys):
    """--price prices the --llm model; a --procedures file asking another model ran the whole
    study (4 paid requests), then failed on the price with status 2 before --out was written:
    the results were lost. A language-model procedure of another model is now refused before
    any request, and a usage record under a model the price does not cover costs nothing to
    the results (the cost is left out, saying why)."""
    file = tmp_path / "procs.py"
    out = tmp_path / "res.nc"
    with ChatServer("openai", lambda body: fenced(GP_PROGRAM)) as server:
        argv = ["replicate", "lottery", "--llm", "openai:gp-model", "--base-url",
                server.base_url, "-M", "2", "--n", "20", "--only", "GP regression",
                "--jobs", "1", "--no-progress", "--procedures", str(file), "--price", "1", "4",
                "--out", str(out)]
        file.write_text("import restrictiveness as rx\nPROCEDURES = {'Other': rx.Completion("
                        f"rx.llm.OpenAIChat('other-model', base_url={server.base_url!r}))}}\n")
        assert main(argv) == 2 and not server.requests and not out.exists()
        assert "procedure 'Other' asks 'other-model'" in capsys.readouterr().err
        file.write_text(
            "import numpy as np\nimport restrictiveness as rx\n"
            "from restrictiveness.engine.protocol import FunctionRule, Procedure\n"
            "class Billed(Procedure):\n"
            "    def fit(self, sample, rng):\n"
            "        return FunctionRule(lambda X: np.zeros(len(X)), info={'model': 'x', "
            "'usage': {'calls': 1, 'input_tokens': 7, 'output_tokens': 2}})\n"
            "PROCEDURES = {'Billed': Billed()}\n")
        assert main(argv) == 0 and out.exists() and len(server.requests) == 2
    printed = capsys.readouterr().out
    assert "cost not computed: prices: no price for model 'x'" in printed
    assert re.search(r"^Billed\s+20\s+2\s+2\s", printed, re.M)   # fits, calls: no cost


def test_the_command_line_runs_the_agent_in_text_for_a_server_without_tools(tmp_path):
    """A server without tool support (vLLM without --enable-auto-tool-choice) refuses every
    request offering tools (HTTP 400), and the command line had no way to the text protocol:
    every agent fit failed (reason client). --tool-protocol text asks in fenced code blocks."""
    def tools_refused(body):
        return 400 if body.get("tools") else None

    with ChatServer("openai", lambda body: "FINAL PROGRAM\n" + fenced(GP_PROGRAM),
                    refuse=tools_refused) as server:
        argv = ["replicate", "lottery", "--llm", "openai:gp-model", "--base-url",
                server.base_url, "--agent", "-M", "2", "--n", "20", "--only", "GP regression",
                "--jobs", "1", "--no-progress"]
        failed = {}
        for protocol in ("auto", "text"):
            out = tmp_path / f"{protocol}.nc"
            assert main([*argv, "--out", str(out), "--tool-protocol", protocol]) == 0
            res = rx.load(out)
            failed[protocol] = int(res.dataset["failed"].sel(procedure="Agent").sum())
            info = json.loads(str(res.dataset["fit_info"].sel(procedure="Agent").values[0, 0]))
            assert info["tool_protocol"] == ("native" if protocol == "auto" else "text")
    assert failed == {"auto": 2, "text": 0}
    ours, gp = gp_losses(res, "Agent")
    np.testing.assert_allclose(ours, gp, rtol=1e-6)


@pytest.mark.parametrize("argv, message", [
    (["--agent"], "--agent: only with --llm"),
    (["--llm", "mistral:x"], "--llm: expected openai:MODEL"),
    (["--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--prompts", "poet"],
     "unknown design"),
    (["--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--rounds", "3"],
     "--rounds: only with --agent"),
    (["--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--tool-protocol", "text"],
     "--tool-protocol: only with --agent"),
    (["--tool-protocol", "text"], "--tool-protocol: only with --llm"),
    # a design named twice ran once without a word; 'all' beside a design was "unknown
    # design(s) ['all']; choose from [...] or all"
    (["--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--prompts", "neutral",
      "econometrician", "neutral"], "--prompts names ['neutral'] more than once"),
    (["--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--prompts", "all",
      "econometrician"], "--prompts: 'all' names every design and stands alone"),
])
def test_command_line_refuses_inconsistent_llm_options(argv, message, capsys):
    assert main(["replicate", "lottery", "-M", "2", "--dry-run", *argv]
                if "--llm" in argv else ["replicate", "lottery", "-M", "2", *argv]) == 2
    assert message in capsys.readouterr().err


def test_command_line_names_its_own_option_for_a_missing_key(capsys, monkeypatch):
    monkeypatch.delenv("RX_NO_SUCH_KEY", raising=False)
    argv = ["replicate", "lottery", "-M", "2", "--llm", "openai:gpt-4o", "--api-key-env",
            "RX_NO_SUCH_KEY"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "set the environment variable RX_NO_SUCH_KEY (or name another with " \
        "--api-key-env NAME)" in err and "api_key=" not in err


def test_demand_uses_the_neutral_prompt_only(capsys):
    argv = ["replicate", "demand", "--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
            "--prompts", "all", "--dry-run"]
    assert main(argv) == 2 and "neutral prompt only" in capsys.readouterr().err


def test_a_call_budget_refuses_requests_from_a_forked_copy():
    """Under Study.run(fit_timeout=...) fits run in forked children: a copy of the budget there
    counted apart and its counts never came back (measured: max_requests=1 allowed one request
    per replication, and the parent's count stayed 0). A forked copy now refuses."""
    from restrictiveness.engine.timeouts import run_in_child
    budget = rx.llm.CallBudget(max_requests=1)

    def unit(key):
        try:
            budget.acquire()
        except ConfigurationError as exc:
            return str(exc)
        return "sent"

    out = run_in_child(unit, [0, 1], 30.0, lambda key, s: "timed out")
    assert all("counts in the process that made it" in v for v in out.values())
    budget.acquire()                      # the parent's own count is untouched and honoured
    assert budget.requests == 1


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_the_bounded_client_keeps_the_sdks_connection_limits(sdk):
    """httpx takes the pool's limits from the transport it is given: the bounded transport had
    httpx's 100 connections and 20 kept alive instead of the SDK's 1,000 and 100, so more
    than 20 threads re-opened a TLS connection for every call."""
    from restrictiveness.ai.clients import _bounded_http_client
    module = importlib.import_module(sdk)     # both SDKs are in the test extra: never skipped
    pool = _bounded_http_client(module, 5.0)._transport._pool
    limits = module.DEFAULT_CONNECTION_LIMITS
    assert (pool._max_connections, pool._max_keepalive_connections) == (
        limits.max_connections, limits.max_keepalive_connections) == (1000, 100)


@pytest.mark.parametrize("bad", [-1, 2.5, True, "10"])
def test_a_call_budget_refuses_limits_that_are_not_counts(bad):
    with pytest.raises(ConfigurationError,
                       match=rf"CallBudget: max_requests must be a whole number >= 0, got {bad!r}"):
        rx.llm.CallBudget(max_requests=bad)
    assert rx.llm.CallBudget(max_tokens=500.0).max_tokens == 500   # an integral float is a count


def test_a_price_table_gives_dollars_per_token_and_refuses_what_it_cannot_price():
    from restrictiveness.engine.usage import price_per_token

    assert price_per_token({"m": (2.5, 10.0)}, "m") == (2.5e-6, 1e-5)
    assert price_per_token({"m": {"input": 3, "output": 15}}, "m") == (3e-6, 15e-6)
    # a NaN price made the cost column NaN, summed by pandas to $0.00; a key other than
    # input/output (a typo, a cached-input price) was ignored
    for entry in [(float("nan"), 2.0), (1.0, float("inf")), (-1.0, 2.0),
                  {"input": 1, "ouput": 2}, {"input": 1, "output": 2, "cached": 0.5}, (1.0,),
                  # a string is a sequence of characters: "25" was priced $2 in, $5 out
                  "25", b"12", (True, 2.0), {"input": 1.0, "output": False}]:
        with pytest.raises(ConfigurationError, match=r"prices\['m'\] must be"):
            price_per_token({"m": entry}, "m")
    with pytest.raises(ConfigurationError, match="no price for model 'other'"):
        price_per_token({"m": (1, 2)}, "other")


class _NoUsageServer(ChatServer):
    """An endpoint that reports no token counts (some OpenAI-compatible servers omit them)."""

    def protocol_reply(self, body, out):
        payload = super().protocol_reply(body, out)
        payload.pop("usage")
        return payload


def test_tokens_an_endpoint_did_not_report_make_usage_unknown_not_zero(protocol, capsys):
    """Calls answered without token counts once summed to 0 tokens and $0.00 in
    Results.usage: a silent wrong cost. They are counted, and the totals they miss are NaN."""
    reply = fenced(MEAN_PROGRAM)
    with ChatServer(protocol, lambda body: reply) as counted, \
            _NoUsageServer(protocol, lambda body: reply) as silent:
        procs = {"Counted": rx.Completion(adapter(counted), limits=LIMITS, run_at_fit=False),
                 "Silent": rx.Completion(adapter(silent), limits=LIMITS, run_at_fit=False)}
        res = gp_study(procs).run(progress=False)
    usage = res.usage(prices={"gp-model": (1.0, 2.0)})
    quiet, told = usage.loc[("Silent", 20)], usage.loc[("Counted", 20)]
    assert (quiet["calls"], quiet["unreported_calls"]) == (2, 2)
    assert np.isnan(quiet["input_tokens"]) and np.isnan(quiet["output_tokens"])
    assert np.isnan(quiet["cost"])
    tokens_in = sum(input_tokens(r["body"]) for r in counted.requests)
    tokens_out = 2 * (len(reply) // 4)
    assert (told["unreported_calls"], told["input_tokens"], told["output_tokens"]) == (
        0, tokens_in, tokens_out)
    assert told["cost"] == pytest.approx((tokens_in * 1.0 + tokens_out * 2.0) / 1e6, rel=1e-12)
    # the command line's total says so instead of printing the reported part as the total
    from argparse import Namespace

    from restrictiveness.cli.replicate import print_usage
    print_usage(res, Namespace(price=[1.0, 2.0], llm="openai:gp-model"))
    total = capsys.readouterr().out.splitlines()[-1]
    assert total == ("total: 4 calls (0 cached, 0 retries), tokens and cost unknown: the "
                     "endpoint did not report the token counts of 2 calls")


@pytest.mark.parametrize("value", [-5, 1e30, float("nan"), "many", True, 2.5])
def test_a_usage_record_holding_what_is_not_a_count_is_refused_not_totalled(value):
    """A procedure's own usage record (its fit_info) of -5 or 1e30 tokens was summed into
    Results.usage() and priced (NaN gave a NaN cost, text a TypeError or a string)."""
    import xarray as xr

    study = rx.Study(rx.MonotoneGP(rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)),
                                                  rx.Increasing("x1", "x2"), rx.Between(0, 1)),
                                   n_eval=60),
                     {"llm": rx.OLS("y ~ x1 + x2")}, rx.Constant(), n=[10], replications=2)
    res = study.run(progress=False)

    def usage_of(input_tokens):
        info = json.dumps({"model": "m", "usage": {"calls": 1, "input_tokens": input_tokens,
                                                   "output_tokens": 3, "seconds": 0.25}})
        return rx.Results(res.dataset.assign(fit_info=xr.full_like(
            res.dataset["fit_info"], info, dtype=object))).usage(prices={"m": (2.0, 4.0)})

    good = usage_of(1000).loc[("llm", 10)]
    assert (good["input_tokens"], good["seconds"]) == (2000, 0.5)
    assert good["cost"] == pytest.approx((2000 * 2.0 + 6 * 4.0) / 1e6, rel=1e-12)
    with pytest.raises(rx.DataError, match=re.escape(
            f"the usage record of procedure 'llm' (n=10, replication 0) says input_tokens = "
            f"{value!r}, not a count")):
        usage_of(value)


def test_usage_totals_add_counts_not_flags():
    """A procedure's usage record may carry flags (True is an int to Python): they are not
    counts, and summed they would show as calls or tokens."""
    from restrictiveness.engine.usage import add_usage

    total = {"calls": 1}
    add_usage(total, {"calls": 2, "input_tokens": 7, "hit_limit": True, "note": "x"})
    assert total == {"calls": 3, "input_tokens": 7}


@pytest.mark.parametrize("cls", ["OpenAIChat", "AnthropicChat"])
def test_adapters_refuse_options_they_would_misuse(cls):
    make = getattr(rx.llm, cls)
    for options, message in [
            ({"timeout": float("inf")}, "timeout must be positive, finite"),
            ({"max_retries": 2.5}, "max_retries must be a whole number >= 0"),
            ({"max_retries": True}, "max_retries must be a whole number"),
            ({"max_tokens": 100.5}, "max_tokens must be a whole number >= 1"),
            ({"api_key_env": ""}, "api_key_env must name an environment variable"),
            ({"extra_body": {"model": "other"}}, r"extra_body must not set \['model'\]"),
            ({"extra_body": {"temperature": 1.5, "seed": 1}},
             r"extra_body must not set \['temperature'\]"),
            ({"extra_body": {"stream": True}}, r"extra_body must not set \['stream'\]"),
            ({"temperature": True}, r"temperature must be a number in \[0, 2\], got True"),
            ({"temperature": "0.5"}, r"temperature must be a number in \[0, 2\], got '0.5'"),
            ({"temperature": float("nan")}, r"temperature must be a number in \[0, 2\]"),
            ({"backoff_max": float("inf")}, r"need 0 <= backoff <= backoff_max, finite"),
            ({"backoff": "1"}, r"need 0 <= backoff <= backoff_max, finite"),
            # a key read as bytes: every call failed with a bare TypeError
            ({"api_key": b"sk-RECOGNISABLE"}, r"api_key must be a string \(or None: read the "
                                               r"environment variable\), got bytes$"),
            ({"api_key": 12345}, r"api_key must be a string .*, got int$")]:
        with pytest.raises(ConfigurationError, match=f"{cls}: {message}"):
            make("m", base_url="http://127.0.0.1:9/v1", **options)
    ok = make("m", base_url="http://127.0.0.1:9/v1", max_tokens=100.0, max_retries=np.int64(2),
              extra_body={"seed": 7})
    assert (ok.max_tokens, ok.max_retries, ok.extra_body) == (100, 2, {"seed": 7})
    assert type(ok.max_tokens) is int and type(ok.max_retries) is int


def test_anthropic_refuses_a_temperature_outside_its_range(capsys):
    """The Messages API takes temperature in [0, 1]; AnthropicChat took OpenAI's [0, 2], so
    temperature=1.5 was sent with every request, each refused with HTTP 400: a study's every
    fit failed at its first call, the refusal found only in the failure counts."""
    with pytest.raises(ConfigurationError, match=r"AnthropicChat: temperature must be in "
                                                 r"\[0, 1\] \(the Messages API's range\), got 1.5"):
        rx.llm.AnthropicChat("m", base_url="http://127.0.0.1:9", temperature=1.5)
    assert rx.llm.AnthropicChat("m", base_url="http://127.0.0.1:9", temperature=1).temperature == 1
    assert rx.llm.OpenAIChat("m", base_url="http://127.0.0.1:9/v1", temperature=1.5).temperature \
        == 1.5
    assert main(["replicate", "lottery", "--llm", "anthropic:m", "--base-url",
                 "http://127.0.0.1:9", "--temperature", "1.5", "--dry-run"]) == 2
    assert "temperature must be in [0, 1]" in capsys.readouterr().err


def test_openai_refuses_extra_body_asking_for_several_replies():
    """extra_body={"n": 3} made the endpoint produce (and bill) three replies; the first was
    read and two dropped without a word."""
    n_choices = []

    class Several(ChatServer):
        def protocol_reply(self, body, out):
            payload = super().protocol_reply(body, out)
            n_choices.append(body.get("n", 1))
            payload["choices"] = payload["choices"] * body.get("n", 1)
            return payload

    with Several("openai", lambda body: "one") as server:
        for n in (3, 0, 2.5, "3", True):
            with pytest.raises(ConfigurationError, match=f"OpenAIChat: extra_body may not ask "
                                                         f"for n={re.escape(repr(n))} replies"):
                adapter(server, extra_body={"n": n})
        assert adapter(server, extra_body={"n": 1}).chat(
            [{"role": "user", "content": "hi"}]).text == "one"
    assert n_choices == [1]
    assert rx.llm.AnthropicChat("m", base_url=server.base_url, extra_body={"top_k": 3}).extra_body \
        == {"top_k": 3}


def test_openai_api_gets_max_completion_tokens_other_servers_max_tokens(monkeypatch):
    """OpenAI's API refuses max_tokens for its reasoning models (HTTP 400: 'use
    max_completion_tokens instead'), so OpenAIChat(max_tokens=N), or --max-tokens N on the
    command line, failed every call to them; it takes max_completion_tokens for every model.
    Compatible servers still get max_tokens."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    sent = []

    class Completions:
        def create(self, **kwargs):
            sent.append(kwargs)

    client = type("Client", (), {"chat": type("Chat", (), {"completions": Completions()})()})()
    messages = [{"role": "user", "content": "hi"}]
    rx.llm.OpenAIChat("gpt-5", api_key="k", max_tokens=100)._request(client, messages, None,
                                                                     "auto")
    rx.llm.OpenAIChat("gpt-5", base_url="https://api.openai.com/v1/", max_tokens=100,
                      extra_body={"seed": 1})._request(client, messages, None, "auto")
    rx.llm.OpenAIChat("gpt-5", api_key="k")._request(client, messages, None, "auto")
    assert [s.get("max_completion_tokens") for s in sent] == [100, 100, None]
    assert not any("max_tokens" in s for s in sent)
    with ChatServer("openai", lambda body: "ok") as server:
        adapter(server, max_tokens=7).chat(messages)
    assert server.requests[0]["body"]["max_tokens"] == 7
    assert "max_completion_tokens" not in server.requests[0]["body"]
    with pytest.raises(ConfigurationError, match="give the output-token limit once"):
        rx.llm.OpenAIChat("gpt-5", max_tokens=5, extra_body={"max_completion_tokens": 9})


def test_extra_body_cannot_make_the_endpoint_serve_another_model():
    """Before, extra_body={"model": ...} replaced the model in the request: the server answered
    as 'other' while fit_info, the price table and the cache named 'm'."""
    with ChatServer("openai", lambda body: body["model"]) as server:
        llm = adapter(server, "m", api_key="sk-x", extra_body={"seed": 1})
        assert llm([{"role": "user", "content": "hi"}]) == "m"
        with pytest.raises(ConfigurationError, match="extra_body must not set"):
            adapter(server, "m", api_key="sk-x", extra_body={"model": "other"})
