"""Language-model procedures with scripted clients: code extraction, prompts, Completion,
Agent, and the response cache (a rerun makes no client calls)."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import sys

import numpy as np
import pytest
from scripted import Scripted, fenced

from restrictiveness.ai.llm import (
    FINAL_MARKER,
    PROMPTS,
    Agent,
    Completion,
    PromptDesign,
    ResponseCache,
    _is_final,
    build_messages,
    extract_code,
    sample_csv,
)
from restrictiveness.ai.programs import ProgramError
from restrictiveness.ai.sandbox import DEFAULT_ALLOWED_MODULES, SandboxLimits
from restrictiveness.procedures.generic import OLS
from restrictiveness.shared.exceptions import ConfigurationError
from restrictiveness.shared.sample import Sample

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="sandbox limits need Linux")

FAST = SandboxLimits(wall_seconds=30, cpu_seconds=20, memory_bytes=2 * 2**30)


# ------------------------------------------------------------------ extract_code


@pytest.mark.parametrize("response, code", [
    ("```python\nx = 1\n```", "x = 1\n"),
    ("```py\nx = 1\n```", "x = 1\n"),
    ("```Python3\nx = 1\n```", "x = 1\n"),
    ("```\nx = 1\n```", "x = 1\n"),
    ("text\n```python\na = 1\n```\nmore\n```python\nb = 2\n```\nend", "b = 2\n"),
    ("```python\na = 1\n```\n```bash\nls\n```", "a = 1\n"),               # other language
    ("```bash\nls\n```\n```python\nb = 2\n```", "b = 2\n"),               # fence pairing
    ("```json\n{}\n```", None),
    ("no code at all", None),
    ("```python\nunterminated = 1\n", None),
    ("1. Step:\n   ```python\n   def f():\n       return 1\n   ```", "def f():\n    return 1\n"),
    ("```python\r\nx = 1\r\n```\r\n", "x = 1\n"),
    ("```python\ns = '''\n``` inside a string\n'''\n```", "s = '''\n``` inside a string\n'''\n"),
    # Markdown fences: an info string after the language (such a fence was not taken for one,
    # so its closing fence opened a block of prose), tildes, longer fences around ``` lines
    ('```python title="a.py"\nx = 1\n```\nprose\n```python\ny = 2\n```', "y = 2\n"),
    ("```python\nx = 1\n```\n```python title=b\ny = 2\n```", "y = 2\n"),
    ("```python\nx = 1\n```\n~~~python\ny = 2\n~~~", "y = 2\n"),
    ("````python\ns = '''\n```\n'''\n````", "s = '''\n```\n'''\n"),
    ("```python\nx = 1\n`````", "x = 1\n"),
    ("~~~python\nx = 1\n```\n~~~", "x = 1\n```\n"),
    ("```python```", None),
    ("````markdown\nHere:\n```python\nx = 1\n```\n````\n```bash\nls\n```", "x = 1\n"),
    # a truncated reply fenced whole: the unterminated wrapper keeps the blocks it closed
    ("````markdown\nHere:\n```python\nx = 1\n```\nand", "x = 1\n"),
    # an unlabelled wrapper holding a Python block is read into, not run as a program
    ("````\n```python\nx = 1\n```\n````", "x = 1\n"),
    ("```python\rx = 1\r```\r", "x = 1\n"),                 # old Mac line endings
    ("```python\nx = 1\n```  \n", "x = 1\n"),                # spaces after the closing fence
    ("```x = 1``` sets x; then:\n```python\ny = 2\n```", "y = 2\n"),   # inline code is no fence
])
def test_extract_code(response, code):
    assert extract_code(response) == code


def test_extract_code_takes_linear_time_on_unclosed_and_nested_fences():
    # each unterminated fence is read again, and wrappers are read into, to a bounded depth
    import time
    for reply, code in (("```a\n" * 20000, None), ("````markdown\n" * 20000 + "x\n", None),
                        ("````\n" * 20001, "")):      # the last: 10,000 empty blocks, one open
        start = time.process_time()
        assert extract_code(reply) == code
        assert time.process_time() - start < 2.0


def test_extract_code_rejects_non_strings():
    assert extract_code(None) is None


@pytest.mark.parametrize("reply, final", [
    (f"{FINAL_MARKER}\n```python\nx=1\n```", True),
    (f"**{FINAL_MARKER}**\n```python\nx=1\n```", True),
    ("Here is my final program:\n```python\nx=1\n```", False),
    (f"```python\n# {FINAL_MARKER} is only inside the code\n```", False),
    (f"````markdown\n{FINAL_MARKER}\n```python\nx=1\n```\n````", True),   # a wrapped reply
])
def test_final_marker(reply, final):
    assert _is_final(reply) is final


# ------------------------------------------------------------------ prompts and data


def test_prompt_designs_follow_table_2():
    assert list(PROMPTS) == ["neutral", "econometrician", "economic-model", "data-scientist",
                             "machine-learning"]
    # role pairs and shared instructions as the table's "Same as ..." entries say
    assert PROMPTS["neutral"].role is None
    assert PROMPTS["econometrician"].role == PROMPTS["economic-model"].role
    assert PROMPTS["data-scientist"].role == PROMPTS["machine-learning"].role
    assert PROMPTS["econometrician"].instruction == PROMPTS["neutral"].instruction == \
        PROMPTS["data-scientist"].instruction
    assert len({p.instruction for p in PROMPTS.values()}) == 3
    target = "certainty equivalents"
    for p in PROMPTS.values():
        text = p.instruction_for(target)
        assert text.startswith("Using the supplied data, ") and text.endswith(f"{target}.")
    assert "risk preferences" in PROMPTS["economic-model"].instruction
    assert "machine-learning method" in PROMPTS["machine-learning"].instruction


@pytest.fixture(scope="module")
def sample():
    rng = np.random.default_rng(3)
    U = rng.uniform(size=(25, 3))
    X = np.column_stack([100 * U[:, 0], 100 * U[:, 0] * U[:, 1], U[:, 2]])  # z_lo <= z_hi
    y = X[:, 1] + X[:, 2] ** 1.3 * (X[:, 0] - X[:, 1])
    return Sample(X, y, ("z_hi", "z_lo", "p"), "ce")


def test_csv_in_the_prompt_reproduces_the_sample(sample):
    for name, design in PROMPTS.items():
        msgs = build_messages(sample, name)
        assert [m["role"] for m in msgs] == (["user"] if design.role is None
                                             else ["system", "user"])
        task = msgs[-1]["content"]
        assert design.instruction_for("certainty equivalents") in task
        csv = task.split("```csv\n")[1].split("```")[0]
        table = np.loadtxt(io.StringIO(csv), delimiter=",", skiprows=1)
        np.testing.assert_allclose(table[:, :3], sample.X, rtol=1e-9)
        np.testing.assert_allclose(table[:, 3], sample.y, rtol=1e-9)
        assert csv.splitlines()[0] == "z_hi,z_lo,p,ce"
        assert "def predict(X_train, y_train, X)" in task and "Tools:" not in task
    agent_task = build_messages(sample, agent=True, rounds=7)[-1]["content"]
    assert "Tools:" in agent_task and "at most 7 runs" in agent_task


def test_csv_of_markets_has_one_row_per_product():
    X = np.arange(2 * 3 * 2, dtype=float).reshape(2, 3, 2)
    y = np.arange(6, dtype=float).reshape(2, 3) / 10
    lines = sample_csv(Sample(X, y, ("price", "sugar"), "share")).splitlines()
    assert lines[0] == "market,product,price,sugar,share" and len(lines) == 7
    assert lines[5] == "1,1,8,9,0.4"


def test_completion_on_markets_predicts_shares_per_product():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(8, 4, 3))
    y = rng.dirichlet(np.ones(5), size=8)[:, :4]
    markets = Sample(X, y, ("price", "sugar", "mushy"), "share")
    code = ("import numpy as np\n\ndef predict(X_train, y_train, X):\n"
            "    return np.tile(y_train.mean(axis=0), (len(X), 1))\n")
    client = Scripted(fenced(code))
    rule = Completion(client, target="market shares", limits=FAST).fit(markets, rng)
    np.testing.assert_allclose(rule.predict(X[:3]), np.tile(y.mean(axis=0), (3, 1)))
    task = client.seen[0][-1]["content"]
    assert "(8 markets, 32 rows, CSV)" in task and "shape (m, 4)" in task


def test_unknown_prompt_is_refused(sample):
    with pytest.raises(ConfigurationError, match="prompt"):
        build_messages(sample, "poet")
    with pytest.raises(ConfigurationError, match="prompt"):
        Completion(lambda m: "", prompt="poet")
    custom = PromptDesign("custom", "You are terse.", "Predict {target} from the data.")
    assert build_messages(sample, custom, target="shares")[1]["content"].count(
        "Predict shares from the data.") == 1


# ------------------------------------------------------------------ scripted clients


OLS_CODE = """import numpy as np

def predict(X_train, y_train, X):
    D = np.column_stack([np.ones(len(X_train)), X_train])
    beta = np.linalg.lstsq(D, y_train, rcond=None)[0]
    return np.column_stack([np.ones(len(X)), X]) @ beta
"""

LOOKUP_CODE = """import numpy as np

def predict(X_train, y_train, X):
    # nearest training lottery: a lookup table, nothing estimated
    d = ((X[:, None, :] - X_train[None, :, :]) ** 2).sum(axis=2)
    return y_train[d.argmin(axis=1)]
"""


def test_completion_ols_program_matches_ols(sample):
    client = Scripted(fenced(OLS_CODE))
    rng = np.random.default_rng(0)
    rule = Completion(client, "econometrician", limits=FAST).fit(sample, rng)
    Xq = sample.X[::3] * 1.01
    expected = OLS("ce ~ z_hi + z_lo + p").fit(sample, rng).predict(Xq)
    np.testing.assert_allclose(rule.predict(Xq), expected, rtol=1e-9)
    info = rule.info
    assert client.calls == 1 and info["client_calls"] == 1 and info["rounds_used"] == 0
    assert info["reason"] is None and info["prompt"] == "econometrician"
    assert info["model"] == "scripted-model" and info["estimates_parameters"]
    assert info["program"] == OLS_CODE
    assert client.seen[0][0] == {"role": "system", "content": PROMPTS["econometrician"].role}
    json.dumps(info)  # studies store it as JSON


def test_completion_lookup_table_interpolates(sample):
    rule = Completion(Scripted(fenced(LOOKUP_CODE)), limits=FAST).fit(
        sample, np.random.default_rng(0))
    np.testing.assert_array_equal(rule.predict(sample.X), sample.y)
    assert not rule.info["estimates_parameters"] and rule.info["uses_training_data"]


@pytest.mark.parametrize("reply, reason, text", [
    (fenced("def predict(X_train, y_train, X)\n    return X\n"), "crash", "SyntaxError"),
    (fenced("import numpy as np\nCOEF = 2.0\n"), "crash", "no function predict"),
    ("I would use a CPT model with alpha = 0.8.", "invalid-output", "no Python code block"),
])
def test_completion_failures_are_recorded(sample, reply, reason, text):
    rule = Completion(Scripted(reply), limits=FAST).fit(sample, np.random.default_rng(0))
    assert rule.info["reason"] == reason
    with pytest.raises(ProgramError, match=f"(?s)^{reason}: .*{text}"):
        rule.predict(sample.X[:2])


def test_completion_pickles(sample):
    proc = Completion(Scripted(fenced(OLS_CODE)), limits=FAST)
    back = pickle.loads(pickle.dumps(proc))
    rule = back.fit(sample, np.random.default_rng(0))
    assert rule.info["reason"] is None


AGENT_TOOL = """import numpy as np
X, y = np.load('X_train.npy'), np.load('y_train.npy')
D = np.column_stack([np.ones(len(X)), X])
beta = np.linalg.lstsq(D, y, rcond=None)[0]
np.save('beta.npy', beta)
print('beta0 = %.6f' % beta[0])
"""

AGENT_FINAL = """import numpy as np

BETA = np.load('beta.npy')   # estimated during tool use

def predict(X_train, y_train, X):
    return np.column_stack([np.ones(len(X)), X]) @ BETA
"""


def test_agent_estimates_in_a_tool_round_and_returns_a_program(sample):
    client = Scripted(fenced(AGENT_TOOL), fenced(AGENT_FINAL, final=True))
    rng = np.random.default_rng(0)
    rule = Agent(client, limits=FAST, tool_modules=DEFAULT_ALLOWED_MODULES).fit(sample, rng)
    expected = OLS("ce ~ z_hi + z_lo + p").fit(sample, rng)
    np.testing.assert_allclose(rule.predict(sample.X[:5]), expected.predict(sample.X[:5]),
                               rtol=1e-9)
    assert client.calls == 2 and rule.info["rounds_used"] == 1
    assert not rule.info["hit_limit"] and "beta.npy" in rule.info["files"]
    feedback = client.seen[1][-1]
    assert feedback["role"] == "user"
    assert f"beta0 = {expected.beta[0]:.6f}" in feedback["content"]
    assert "Tools:" in client.seen[0][-1]["content"]


def test_agent_records_the_files_it_did_not_hand_to_the_program(sample):
    """Files over max_file_bytes and folders were dropped without a word: a program
    reading one failed with FileNotFoundError and its record did not say why."""
    tool = ("import os\nopen('small.txt', 'w').write('1')\n"
            "open('big.bin', 'wb').write(b'0' * 5000)\n"
            "os.mkdir('sub')\n")
    final = ("def predict(X_train, y_train, X):\n"
             "    return [float(len(open('big.bin', 'rb').read()))] * len(X)\n")
    client = Scripted(fenced(tool), fenced(final, final=True))
    rule = Agent(client, limits=FAST, tool_modules=DEFAULT_ALLOWED_MODULES,
                 max_file_bytes=3000).fit(sample, np.random.default_rng(0))
    assert rule.info["tool_runs"] == [{"ok": True, "reason": None}]
    assert "small.txt" in rule.info["files"] and "big.bin" not in rule.info["files"]
    left_out = rule.info["files_left_out"]
    assert sorted(left_out) == ["big.bin", "sub"]
    assert left_out["big.bin"] == "5000 bytes would pass max_file_bytes=3000"
    assert left_out["sub"] == "not a plain file (a folder or a link)"
    assert rule.info["reason"] == "crash" and "FileNotFoundError" in rule.info["message"]


def test_agent_budget_is_enforced(sample):
    client = Scripted(fenced("print('still exploring')\n"))
    rule = Agent(client, rounds=3, limits=FAST, tool_modules=DEFAULT_ALLOWED_MODULES).fit(
        sample, np.random.default_rng(0))
    assert client.calls == 4 and rule.info["rounds_used"] == 3 and rule.info["hit_limit"]
    assert "tool budget is used up" in client.seen[3][-1]["content"]
    assert rule.info["reason"] == "crash"        # its last reply has no predict function


def test_agent_reminders_and_refusals_are_fed_back(sample):
    client = Scripted("I think a CPT model fits.",
                      fenced("import socket\n"),
                      fenced("raise ValueError('bad idea')\n"),
                      fenced(LOOKUP_CODE, final=True))
    rule = Agent(client, rounds=5, limits=FAST, tool_modules=DEFAULT_ALLOWED_MODULES).fit(
        sample, np.random.default_rng(0))
    reminder, refused, error = (client.seen[i][-1]["content"] for i in (1, 2, 3))
    assert reminder.startswith("No code block found")
    assert "Run failed (forbidden)" in refused and "socket" in refused
    assert "Run failed (crash)" in error and "bad idea" in error
    assert "/tmp" not in error and 'File "program.py"' in error   # paths made relative
    assert rule.info["rounds_used"] == 2 and rule.info["tool_runs"] == [
        {"ok": False, "reason": "forbidden"}, {"ok": False, "reason": "crash"}]
    np.testing.assert_array_equal(rule.predict(sample.X), sample.y)


@pytest.mark.parametrize("final, reason, text", [
    ("def predict(X_train, y_train, X)\n    return X\n", "crash", "SyntaxError"),
    ("import numpy as np\nCOEF = 2.0\n", "crash", "no function predict"),
])
def test_agent_final_program_failures_are_recorded(sample, final, reason, text):
    client = Scripted(fenced("print(1)\n"), fenced(final, final=True))
    rule = Agent(client, limits=FAST, tool_modules=DEFAULT_ALLOWED_MODULES).fit(
        sample, np.random.default_rng(0))
    assert rule.info["reason"] == reason and rule.info["rounds_used"] == 1
    with pytest.raises(ProgramError, match=f"(?s)^{reason}: .*{text}"):
        rule.predict(sample.X[:2])


def test_agent_with_no_rounds_answers_at_once(sample):
    client = Scripted(fenced(OLS_CODE))
    rule = Agent(client, rounds=0, limits=FAST).fit(sample, np.random.default_rng(0))
    assert client.calls == 1 and rule.info["rounds_used"] == 0 and rule.info["reason"] is None


def test_transcript_and_deferred_validation(sample):
    client = Scripted(fenced("print(2 + 2)\n"), fenced(OLS_CODE, final=True))
    rule = Agent(client, limits=FAST, tool_modules=DEFAULT_ALLOWED_MODULES, run_at_fit=False,
                 record_transcript=True).fit(sample, np.random.default_rng(0))
    roles = [m["role"] for m in rule.info["transcript"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert "4" in rule.info["transcript"][2]["content"]
    assert rule.info["runs"] == 0                     # not run at fit time
    rule.predict(sample.X[:2])
    assert rule.info["runs"] == 1 and rule.info["reason"] is None


# ------------------------------------------------------------------ cache


def test_rerun_with_cache_makes_no_calls(sample, tmp_path):
    cache = ResponseCache(tmp_path / "replies")
    client = Scripted(fenced(OLS_CODE))
    first = Completion(client, cache=cache, limits=FAST).fit(sample, np.random.default_rng(0))
    again = Completion(client, cache=str(cache.path), limits=FAST).fit(
        sample, np.random.default_rng(0))
    assert client.calls == 1 and again.info["client_calls"] == 0 and len(cache) == 1
    np.testing.assert_array_equal(first.predict(sample.X[:4]), again.predict(sample.X[:4]))
    # another model id or another sample is a different question
    other = Scripted(fenced(OLS_CODE))
    other.model = "another-model"
    Completion(other, cache=cache, limits=FAST).fit(sample, np.random.default_rng(0))
    assert other.calls == 1 and len(cache) == 2


def test_a_cached_reply_adds_no_usage(sample, tmp_path):
    """A reply from the cache cost nothing now: its tokens and the retries it once took are
    not counted again in the rerun's usage (they would be billed twice in Results.usage)."""
    from restrictiveness.ai.clients import ChatReply

    class Retrying:
        model = "retrying-model"

        def chat(self, messages, tools=None, tool_choice="auto"):
            return ChatReply(fenced(OLS_CODE), input_tokens=50, output_tokens=20, retries=2)

        def __call__(self, messages):
            return self.chat(messages).text

    first = Completion(Retrying(), cache=tmp_path, limits=FAST).fit(
        sample, np.random.default_rng(0))
    again = Completion(Retrying(), cache=tmp_path, limits=FAST).fit(
        sample, np.random.default_rng(0))
    assert first.info["usage"] == {"calls": 1, "cached_calls": 0, "failed_calls": 0,
                                   "unreported_calls": 0, "retries": 2, "input_tokens": 50,
                                   "output_tokens": 20,
                                   "seconds": first.info["usage"]["seconds"]}
    assert again.info["usage"] == {"calls": 0, "cached_calls": 1, "failed_calls": 0,
                                   "unreported_calls": 0, "retries": 0, "input_tokens": 0,
                                   "output_tokens": 0,
                                   "seconds": 0.0}


def test_a_cache_that_cannot_be_written_keeps_the_reply(sample, tmp_path, monkeypatch):
    cache = ResponseCache(tmp_path / "replies")
    real_replace = os.replace

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    client = Scripted(fenced(OLS_CODE))
    with pytest.warns(RuntimeWarning, match=r"a reply was not stored \(\[Errno 28\] No space"):
        rule = Completion(client, cache=cache, limits=FAST).fit(sample, np.random.default_rng(0))
    monkeypatch.setattr(os, "replace", real_replace)
    assert client.calls == 1 and rule.info["reason"] is None and rule.info["client_calls"] == 1
    assert len(cache) == 0 and sorted(p.name for p in cache.path.iterdir()) == ["FORMAT"]


def test_agent_rerun_with_cache_makes_no_calls(sample, tmp_path):
    def agent(client):
        return Agent(client, cache=tmp_path, limits=FAST, tool_modules=DEFAULT_ALLOWED_MODULES)

    first = Scripted(fenced(AGENT_TOOL), fenced("raise RuntimeError('x')\n"),
                     fenced(AGENT_FINAL, final=True))
    a = agent(first).fit(sample, np.random.default_rng(4))
    second = Scripted(fenced(OLS_CODE))           # would answer differently if asked
    b = agent(second).fit(sample, np.random.default_rng(4))
    assert first.calls == 3 and second.calls == 0 and b.info["client_calls"] == 0
    assert b.info["program"] == a.info["program"] == AGENT_FINAL
    np.testing.assert_array_equal(a.predict(sample.X), b.predict(sample.X))


def test_cache_keys_and_corrupt_entries(tmp_path):
    cache = ResponseCache(tmp_path)
    msgs = [{"role": "user", "content": "q"}]
    assert ResponseCache.key("a", msgs) != ResponseCache.key("b", msgs)
    assert ResponseCache.key("a", msgs) != ResponseCache.key("a", msgs + msgs)
    cache.put("a", msgs, "reply")
    assert cache.get("a", msgs).text == "reply" and cache.get("b", msgs) is None
    (tmp_path / f"{ResponseCache.key('a', msgs)}.json").write_text("{not json")
    assert cache.get("a", msgs) is None


def test_cache_keys_name_the_endpoint_and_sampling(tmp_path):
    msgs = [{"role": "user", "content": "q"}]
    base = {"provider": "openai", "base_url": "http://a/v1", "model": "m", "temperature": None}
    keys = {ResponseCache.key(base, msgs),
            ResponseCache.key({**base, "base_url": "http://b/v1"}, msgs),
            ResponseCache.key({**base, "temperature": 0.0}, msgs),
            ResponseCache.key({**base, "model": "m2"}, msgs),
            ResponseCache.key(base, msgs, {"tools": [], "tool_choice": "none"})}
    assert len(keys) == 5
    cache = ResponseCache(tmp_path)
    cache.put(base, msgs, "from a")
    assert cache.get({**base, "base_url": "http://b/v1"}, msgs) is None
    # an entry whose stored request differs from the one asked is never returned, even
    # under the same file name (a collision or a hand-edited file)
    entry = tmp_path / f"{ResponseCache.key(base, msgs)}.json"
    data = json.loads(entry.read_text())
    data["client"]["model"] = "other"
    entry.write_text(json.dumps(data))
    assert cache.get(base, msgs) is None


def test_a_cache_needs_a_model_id(tmp_path):
    with pytest.raises(ConfigurationError, match="no model id"):
        Completion(lambda m: "", cache=tmp_path)
    with pytest.raises(ConfigurationError, match="model id"):
        ResponseCache(tmp_path).put({"model": None}, [], "x")
    # a custom client whose cache_identity() names no model (or an empty one): a KeyError
    # when the procedure was made, or a cache accepted that refused every fit's first call

    class Custom:
        def __init__(self, identity):
            self.identity = identity

        def __call__(self, messages):
            return ""

        def cache_identity(self):
            return self.identity

    for identity in ({"base_url": "http://127.0.0.1:9/v1"}, {"model": ""}):
        with pytest.raises(ConfigurationError, match="the client has no model id"):
            Completion(Custom(identity), cache=tmp_path)
        assert Completion(Custom(identity)).model is None


def _old_cache(path, model, messages, reply):
    """An entry as restrictiveness 0.1 wrote it: sha256 of (model, messages) only."""
    import hashlib
    text = json.dumps({"model": model, "messages": messages}, sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))
    key = hashlib.sha256(text.encode()).hexdigest()
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{key}.json").write_text(json.dumps({"model": model, "messages": messages,
                                                   "response": reply}))


def test_old_cache_format_is_refused_then_migrated(sample, tmp_path):
    client = Scripted(fenced(OLS_CODE))
    msgs = build_messages(sample, program_seconds=FAST.wall_seconds)
    _old_cache(tmp_path, client.model, msgs, fenced(LOOKUP_CODE))
    _old_cache(tmp_path, "another-model", msgs, "not ours")
    with pytest.raises(ConfigurationError, match="format of restrictiveness 0.1"):
        ResponseCache(tmp_path)
    with pytest.raises(ConfigurationError, match="migrate"):
        Completion(client, cache=tmp_path, limits=FAST)
    assert ResponseCache.migrate(tmp_path, client) == 1
    assert len(ResponseCache(tmp_path)) == 1          # the other model's reply was dropped
    rule = Completion(client, cache=tmp_path, limits=FAST).fit(sample, np.random.default_rng(0))
    assert client.calls == 0 and rule.info["program"] == LOOKUP_CODE
    with pytest.raises(ConfigurationError, match="already in the current format"):
        ResponseCache.migrate(tmp_path, client)
    (tmp_path / "FORMAT").write_text("restrictiveness response cache, format 99")
    with pytest.raises(ConfigurationError, match="unknown cache format"):
        ResponseCache(tmp_path)


def _create_and_put(root, folders, barrier, glob_delay, lag, errors) -> None:
    """One of two processes creating the same fresh cache folders at once, each then storing a
    reply of its own; failures go to ``errors``."""
    import time
    from pathlib import Path
    if glob_delay:  # widen the window between "no marker yet" and the look for entries
        glob = Path.glob

        def slow_glob(self, pattern):
            time.sleep(glob_delay)
            return glob(self, pattern)
        Path.glob = slow_glob  # type: ignore[method-assign]  # (in this child process only)
    for i in range(folders):
        barrier.wait()
        time.sleep(lag)
        try:
            ResponseCache(root / str(i)).put("m", [{"role": "user", "content": str(os.getpid())}],
                                             "hi")
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            errors.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("folders, glob_delay, lag", [(200, 0.0, 0.0), (3, 0.2, 0.05)],
                         ids=["hammer", "entry-before-the-look"])
def test_two_processes_creating_one_cache_folder(tmp_path, folders, glob_delay, lag):
    # the second case forces the interleaving the first hits by chance: one process finds no
    # FORMAT marker, then (0.2 s later) entries the other wrote after its marker
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    barrier, errors = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_create_and_put, args=(tmp_path, folders, barrier, delay, wait,
                                                        errors))
             for delay, wait in ((glob_delay, 0.0), (0.0, lag))]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == [] and [p.exitcode for p in procs] == [0, 0]
    for i in range(folders):
        cache = ResponseCache(tmp_path / str(i))
        assert len(cache) == 2 and (tmp_path / str(i) / "FORMAT").read_text().startswith(
            "restrictiveness response cache")
        assert {cache.get("m", [{"role": "user", "content": str(p.pid)}]).text
                for p in procs} == {"hi"}


def test_client_must_return_text(sample):
    """A reply that is not text (an SDK's None content, a dict) fails the fit with reason
    "client" and counts as a failed call; it raised a ConfigurationError that a study recorded
    as a failed fit with no record of the call made."""
    for reply in (None, 42, {"content": "x"}):
        rule = Completion(lambda m, reply=reply: reply, model="fake", limits=FAST).fit(
            sample, np.random.default_rng(0))
        assert rule.info["reason"] == "client"
        assert f"the client returned {type(reply).__name__}" in rule.info["message"]
        assert (rule.info["usage"]["calls"], rule.info["usage"]["failed_calls"]) == (1, 1)
        with pytest.raises(ProgramError, match="^client: "):
            rule.predict(sample.X)
    client = Scripted(fenced("print(1)\n"), None)
    rule = Agent(client, rounds=3, limits=FAST, tool_modules=DEFAULT_ALLOWED_MODULES).fit(
        sample, np.random.default_rng(0))
    assert client.calls == 2 and rule.info["reason"] == "client"
    assert (rule.info["usage"]["calls"], rule.info["usage"]["failed_calls"]) == (2, 1)
    with pytest.raises(ConfigurationError, match="client"):
        Completion("not callable")


def test_usage_counts_the_calls_of_fits_whose_reply_was_not_text():
    import restrictiveness as rx
    client = Scripted(None)
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"),
                       rx.Between(0, 1))
    study = rx.Study(rx.MonotoneGP(F, n_eval=20), {"llm": Completion(client)},
                     baseline=OLS("y ~ x1"), n=[6, 9], replications=2)
    with pytest.warns(rx.FailureWarning, match="llm failed in 4 of 4 fits"):
        res = study.run(progress=False)
    usage = res.usage()
    assert client.calls == 4
    assert usage["calls"].sum() == 4 and usage["failed_calls"].sum() == 4
    assert usage["fits"].sum() == 4


def test_agent_rounds_and_cache_folder_are_checked(tmp_path):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("")
    # FileExistsError from pathlib before
    with pytest.raises(ConfigurationError, match="cannot be used as a cache folder"):
        ResponseCache(not_a_folder)
    (tmp_path / "odd" / "FORMAT").mkdir(parents=True)  # IsADirectoryError before
    with pytest.raises(ConfigurationError, match="its FORMAT marker cannot be read"):
        ResponseCache(tmp_path / "odd")
    # int(None) was a bare TypeError
    with pytest.raises(ConfigurationError, match="rounds must be a whole number >= 0, got None"):
        Agent(lambda messages: "", rounds=None)


@pytest.mark.parametrize("option, value", [("max_file_bytes", -1), ("max_file_bytes", 1.5),
                                           ("tool_chars", 1000.7), ("tool_chars", 100),
                                           ("tool_chars", None)])
def test_agent_byte_and_character_budgets_are_whole_numbers(option, value):
    """max_file_bytes=-1 (read as "no limit") handed the returned program none of the agent's
    files, and fractions were truncated; each is refused by name."""
    with pytest.raises(ConfigurationError, match=f"{option} must be a whole number"):
        Agent(lambda messages: "", **{option: value})
    assert Agent(lambda messages: "", **{option: 20_000}).__dict__[option] == 20_000


@pytest.mark.parametrize("option, value, message", [
    ("run_at_fit", "no", "run_at_fit must be True or False, got 'no'"),
    ("record_transcript", "no", "record_transcript must be True or False"),
    ("total_seconds", "100", "total_seconds must be a positive number of seconds, got '100'"),
    ("total_seconds", True, "total_seconds must be a positive number of seconds, got True"),
    ("total_seconds", None, "total_seconds must be a positive number"),
    ("target", None, "target must be a nonempty text"),
    ("description", 5, "description must be a text or None, got int")])
def test_language_model_options_it_cannot_honour_are_refused(option, value, message):
    """run_at_fit='no' and record_transcript='no' were read as True (bool of a nonempty text),
    total_seconds=True as a one-second budget and '100' or None failed with a bare TypeError,
    and target=None asked the model for 'the best prediction algorithm you can for None.'."""
    from restrictiveness.ai.programs import ProgramProcedure
    makers = [lambda **kw: Agent(lambda m: "", model="m", **kw)]
    if option in ("run_at_fit", "target", "description"):
        makers.append(lambda **kw: Completion(lambda m: "", model="m", **kw))
    if option == "run_at_fit":
        makers.append(lambda **kw: ProgramProcedure("x = 1", **kw))
    for make in makers:
        with pytest.raises(ConfigurationError, match=re.escape(message)):
            make(**{option: value})
    assert Agent(lambda m: "", total_seconds=float("inf")).total_seconds == float("inf")
    assert Agent(lambda m: "", run_at_fit=np.bool_(False)).run_at_fit is False


def test_the_task_names_the_modules_the_sandbox_admits():
    """allowed_modules and tool_modules were enforced by the sandbox but never told: the task
    said "only numpy, math and the Python standard library" and the agent's "numpy, scipy,
    pandas and scikit-learn" whatever they were, so the model never used a module added for
    it, and used ones refused to it (each such fit failed as "forbidden")."""
    s = Sample(np.zeros((2, 1)), np.array([1.0, 3.0]), ("x",))

    def task(proc):
        return proc.first_request(s)[0][-1]["content"]

    program = "The program is run in a new Python interpreter with the training data passed " \
        "to predict; it may use {}, has no network access"
    tools = "Code you run may use {}; each run"
    assert program.format("only the modules numpy and scipy") in task(
        Completion(print, allowed_modules={"numpy", "scipy"}))
    assert program.format("only numpy, scipy and the Python standard library") in task(
        Completion(print, allowed_modules=DEFAULT_ALLOWED_MODULES | {"scipy"}))
    agent = task(Agent(print, allowed_modules={"numpy", "math", "json"},
                       tool_modules=["numpy", "pandas"]))
    assert program.format("only the modules json, math and numpy") in agent
    assert tools.format("only the modules numpy and pandas") in agent
    # the defaults read as before (the paper's design; reply caches keep their keys)
    assert program.format("only numpy, math and the Python standard library") in task(
        Completion(print, allowed_modules=DEFAULT_ALLOWED_MODULES))
    assert tools.format("numpy, scipy, pandas and scikit-learn") in task(Agent(print))


def test_a_timeout_beside_limits_is_refused_not_ignored():
    """timeout=5 beside limits=SandboxLimits(...) ran with the limits' wall clock (600 s by
    default), the timeout ignored; a timeout the limits do not share is refused."""
    from restrictiveness.ai.programs import ProgramProcedure
    src = "def predict(a, b, X):\n    return [0.0] * len(X)\n"
    memory = SandboxLimits(memory_bytes=2 * 2**30)
    for make in (lambda **kw: ProgramProcedure(src, **kw),
                 lambda **kw: Completion(lambda m: "", **kw),
                 lambda **kw: Agent(lambda m: "", **kw)):
        with pytest.raises(ConfigurationError, match="timeout=5 contradicts limits, whose "
                                                     "wall_seconds is 600"):
            make(timeout=5, limits=memory)
        assert make(timeout=5).limits.wall_seconds == 5
        assert make(limits=FAST).limits == FAST
        assert make(timeout=30, limits=FAST).limits == FAST  # the same wall clock
        assert make().limits.wall_seconds == 600
        with pytest.raises(ConfigurationError, match="limits must be a SandboxLimits"):
            make(limits={"wall_seconds": 5})
    with pytest.raises(ConfigurationError, match="tool_timeout=5 contradicts tool_limits"):
        Agent(lambda m: "", tool_timeout=5, tool_limits=memory)
    assert Agent(lambda m: "").tool_limits.wall_seconds == 120
    assert Agent(lambda m: "", tool_timeout=7).tool_limits.wall_seconds == 7


# ------------------------------------------------------------------ plan_calls


def test_usage_counts_every_training_draw_as_a_fit():
    """With K training draws per pseudo-truth the study sums a replication's usage into one
    record, which Results.usage() counted as one fit: 2 replications of 3 draws showed 2 fits
    for 6 calls, where failures() and plan_calls() say 6."""
    import restrictiveness as rx
    from restrictiveness.ai.budget import plan_calls
    client = Scripted(None)
    proc = Completion(client)
    proc.draws = 3
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"),
                       rx.Between(0, 1))
    study = rx.Study(rx.MonotoneGP(F, n_eval=20), {"llm": proc, "ols": OLS("y ~ x1 + x2")},
                     baseline=OLS("y ~ x1"), n=[6, 9], replications=2, draws=3)
    with pytest.warns(rx.FailureWarning, match="llm failed in 12 of 12 fits"):
        res = study.run(progress=False)
    usage = res.usage()
    assert client.calls == 12
    assert usage["fits"].tolist() == [6, 6] == res.failures().loc["llm", "fits"].tolist()
    assert usage["calls"].tolist() == [6, 6] and plan_calls(study).loc["llm", "fits"] == 12


def test_plan_calls_counts_fits_calls_tokens_and_cost(tmp_path):
    """The plan before a paid run: fits, cached first requests, the calls' range, the input
    tokens of the first requests the client would be sent, and their input price."""
    import restrictiveness as rx
    from restrictiveness.ai.budget import plan_calls
    from restrictiveness.ai.clients import estimate_tokens

    def study(cache):
        clients = {"C": Scripted(fenced(OLS_CODE)), "A": Scripted(fenced(OLS_CODE, final=True))}
        procs = {"C": Completion(clients["C"], cache=cache, limits=FAST),
                 "A": Agent(clients["A"], rounds=3, cache=cache, limits=FAST)}
        return rx.lottery.study(procs, n=[20, 30], replications=3, seed=3, n_eval=100), clients

    # the first requests of replication 0, as the clients receive them in a run
    first, clients = study(None)
    first.run(progress=False, replications=[0])
    tokens = sum(estimate_tokens(m["content"]) + 4 for msgs in clients["C"].seen for m in msgs)
    plan = plan_calls(first, prices={"scripted-model": (2.0, 8.0)})
    # without a cache replication 0 stands for all three: 2 sizes x 3 replications
    assert plan.loc["C", ["fits", "cached", "calls_min", "calls_max"]].tolist() == [6, 0, 6, 6]
    # an agent with 3 rounds makes between 1 and 4 calls per fit
    assert plan.loc["A", ["fits", "cached", "calls_min", "calls_max"]].tolist() == [6, 0, 6, 24]
    assert plan.loc["C", "input_tokens"] == 3 * tokens
    assert plan.loc["C", "cost_min"] == pytest.approx(3 * tokens * 2.0 / 1e6, rel=1e-12)
    # a cache answering replication 0's first requests: those fits make no call (Completion)
    # or an unknown number of later ones (the agent: up to rounds more each)
    cached, _ = study(tmp_path / "replies")
    cached.run(progress=False, replications=[0])
    plan = plan_calls(cached)
    assert plan.loc["C", ["fits", "cached", "calls_min", "calls_max"]].tolist() == [6, 2, 4, 4]
    assert plan.loc["A", ["fits", "cached", "calls_min", "calls_max"]].tolist() == \
        [6, 2, 4, 4 * 4 + 2 * 3]
    assert "cost_min" not in plan


def test_a_study_of_agents_has_the_same_configuration_in_every_session():
    """Agent.tool_modules (and any allow-list given to a program procedure) was a frozenset,
    whose repr orders its members by the interpreter's hash seed: the study's configuration,
    which a checkpoint must match, differed in every new session, so an interrupted Agent run
    could not resume (CheckpointError: 'written by a different study configuration')."""
    import subprocess

    script = (
        "import restrictiveness as rx\n"
        "from restrictiveness.engine.checkpoint import configuration_hash\n"
        "procs = {'A': rx.Agent(print, model='m', tool_protocol='text'),\n"
        "         'C': rx.Completion(print, model='m', allowed_modules=['numpy', 'math', 're']),\n"
        "         'P': rx.ProgramProcedure('x = 1', allowed_modules=['numpy', 'json', 'os'])}\n"
        "study = rx.lottery.study(procs, n=[10], replications=2, n_eval=10)\n"
        "print(configuration_hash(study.configuration()))\n"
        "print(repr(procs['C']).split('allowed_modules=')[1].split(')')[0])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
         os.environ.get("PYTHONPATH", "")])}
    outs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env={**env, "PYTHONHASHSEED": seed}, check=True).stdout.split("\n")
            for seed in ("1", "2", "3")]
    assert outs[0][0] == outs[1][0] == outs[2][0]
    assert outs[0][1] == "frozenset({'math', 'numpy', 're'}"
