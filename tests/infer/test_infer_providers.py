"""The model tiers, driven through the real `ollama` and `anthropic` clients against a loopback
server.
"""

import sys
import time

import pytest
from infer_support import anthropic_error, anthropic_text, ollama_error, ollama_text, write_config

from lackjail.infer import generate

INVALID = "import os\nos.listdir('.')"
VALID = "files = find_files('**/*.py')\nlen(files)"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")


def configure(root, url, order='["ollama", "anthropic"]', ollama="", anthropic=""):
    write_config(
        root,
        f"""
[inference]
order = {order}

[inference.providers.ollama]
host = "{url}"
model = "test-coder"
temperature = 0.1
keep_alive = "1m"
{ollama}

[inference.providers.anthropic]
base_url = "{url}"
model = "test-claude"
max_retries = 0
{anthropic}
""",
    )


def test_ollama_success(llm, kit, tmp_path):
    configure(tmp_path, llm.url)
    llm.reply("ollama", ollama_text(VALID))
    gen = generate("count the python files, please", kit)
    assert (gen.program, gen.tier, gen.source) == (VALID, "ollama", "test-coder")
    [sent] = llm.sent("ollama")
    assert sent["model"] == "test-coder" and sent["keep_alive"] == "1m"
    assert sent["options"]["temperature"] == 0.1
    system, user = sent["messages"]
    assert system["role"] == "system" and "find_files(pattern: str)" in system["content"]
    assert (
        "lackpy" in system["content"] and "isinstance" in system["content"]
    )  # the language spec's builtins
    assert user == {
        "role": "user",
        "content": "Write a lackpy program for this request:\n\ncount the python files, please",
    }
    assert llm.sent("anthropic") == []


def test_parameter_names_reach_the_prompt(llm, kit, tmp_path):
    configure(tmp_path, llm.url)
    llm.reply("ollama", ollama_text("read_file(target)"))
    gen = generate("read the target", kit, params=("target",))
    assert gen.program == "read_file(target)"
    assert "Parameters" in llm.sent("ollama")[0]["messages"][0]["content"]
    assert "target" in llm.sent("ollama")[0]["messages"][0]["content"]


def test_ollama_fenced_reply_is_sanitised(llm, kit, tmp_path):
    configure(tmp_path, llm.url)
    llm.reply(
        "ollama", ollama_text(f"Here is the program:\n\n```python\n{VALID}\n```\nIt counts them.")
    )
    assert generate("count python files", kit).program == VALID


def test_ollama_invalid_then_corrected_after_feedback(llm, kit, tmp_path):
    configure(tmp_path, llm.url)
    llm.reply("ollama", ollama_text(INVALID))
    llm.reply("ollama", ollama_text(VALID))
    gen = generate("count python files", kit)
    assert (gen.program, gen.tier) == (VALID, "ollama")
    first, second = gen.attempts
    assert first["program"] == INVALID and first["errors"] and second["errors"] == []
    assert first["errors"][0]["line"] == 1
    messages = llm.sent("ollama")[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == INVALID
    assert "The validator rejected that program" in messages[3]["content"]
    assert first["errors"][0]["message"] in messages[3]["content"]


def test_feedback_is_sent_once_then_next_tier(llm, kit, tmp_path):
    configure(tmp_path, llm.url)
    llm.reply("ollama", ollama_text(INVALID))
    llm.reply("ollama", ollama_text("while True:\n    x = 1"))
    llm.reply("anthropic", anthropic_text(VALID))
    gen = generate("count python files", kit)
    assert (gen.program, gen.tier) == (VALID, "anthropic")
    assert [a["tier"] for a in gen.attempts] == ["ollama", "ollama", "anthropic"]
    assert len(llm.sent("ollama")) == 2
    assert gen.notes == [
        {"tier": "ollama", "reason": "no valid program after 2 replies", "unavailable": False}
    ]


def test_ollama_server_error_falls_through_to_anthropic(llm, kit, tmp_path):
    configure(tmp_path, llm.url)
    llm.reply("ollama", ollama_error(500, "out of memory"))
    llm.reply("anthropic", anthropic_text(VALID))
    gen = generate("count python files", kit)
    assert (gen.program, gen.tier, gen.source) == (VALID, "anthropic", "test-claude")
    [note] = gen.notes
    assert (
        note["tier"] == "ollama" and "500" in note["reason"] and "out of memory" in note["reason"]
    )
    [sent] = llm.sent("anthropic")
    assert sent["model"] == "test-claude" and sent["system"].startswith(
        "You write programs in a subset of Python"
    )
    assert sent["messages"] == [
        {
            "role": "user",
            "content": "Write a lackpy program for this request:\n\ncount python files",
        }
    ]


def test_ollama_missing_model_is_unavailable(llm, kit, tmp_path):
    configure(tmp_path, llm.url)
    llm.reply("ollama", ollama_error(404, "model 'test-coder' not found"))
    llm.reply("anthropic", anthropic_text(VALID))
    gen = generate("count python files", kit)
    assert gen.tier == "anthropic"
    assert gen.notes[0]["unavailable"] and "ollama pull test-coder" in gen.notes[0]["reason"]


def test_ollama_timeout_falls_through(llm, kit, tmp_path):
    configure(tmp_path, llm.url, ollama="timeout = 0.5")
    llm.reply("ollama", ollama_text(VALID), delay=5)
    llm.reply("anthropic", anthropic_text(VALID))
    started = time.monotonic()
    gen = generate("count python files", kit)
    assert time.monotonic() - started < 4
    assert gen.tier == "anthropic"
    assert (
        gen.notes[0]["tier"] == "ollama" and "did not answer within 0.5s" in gen.notes[0]["reason"]
    )


def test_anthropic_timeout_then_no_program(llm, kit, tmp_path):
    configure(tmp_path, llm.url, order='["anthropic"]', anthropic="timeout = 0.5")
    llm.reply("anthropic", anthropic_text(VALID), delay=5)
    gen = generate("count python files", kit)
    assert gen.program is None and gen.tier is None
    assert "did not answer within 0.5s" in gen.notes[0]["reason"]


def test_anthropic_invalid_then_corrected(llm, kit, tmp_path):
    configure(tmp_path, llm.url, order='["anthropic"]')
    llm.reply("anthropic", anthropic_text(INVALID))
    llm.reply("anthropic", anthropic_text(VALID))
    gen = generate("count python files", kit)
    assert (gen.program, gen.tier) == (VALID, "anthropic")
    messages = llm.sent("anthropic")[1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert "The validator rejected that program" in messages[2]["content"]


def test_anthropic_server_error_falls_through_to_rules(llm, kit, tmp_path):
    configure(tmp_path, llm.url, order='["anthropic", "rules"]')
    llm.reply("anthropic", anthropic_error(529, "overloaded"))
    gen = generate("find all python files and count them", kit)
    assert gen.tier == "rules" and gen.program == "len(find_files('**/*.py'))"
    assert gen.notes[0]["tier"] == "anthropic" and "529" in gen.notes[0]["reason"]


def test_anthropic_without_key_is_skipped(llm, kit, tmp_path, monkeypatch):
    configure(tmp_path, llm.url, order='["anthropic"]')
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    gen = generate("count python files", kit)
    assert gen.program is None
    assert gen.notes == [
        {"tier": "anthropic", "reason": "ANTHROPIC_API_KEY is not set", "unavailable": True}
    ]
    assert llm.requests == []


def test_unreachable_ollama_is_skipped_quickly(kit, tmp_path, closed_port):
    write_config(
        tmp_path,
        f'[inference]\norder = ["ollama", "rules"]\n'
        f'[inference.providers.ollama]\nhost = "http://127.0.0.1:{closed_port}"\n',
    )
    started = time.monotonic()
    gen = generate("find all python files and count them", kit)
    assert time.monotonic() - started < 2
    assert gen.tier == "rules"
    assert gen.notes[0]["tier"] == "ollama" and gen.notes[0]["unavailable"]
    assert f"127.0.0.1:{closed_port}" in gen.notes[0]["reason"]


def test_ollama_host_from_environment(llm, kit, tmp_path, monkeypatch):
    write_config(tmp_path, '[inference]\norder = ["ollama"]\n')
    monkeypatch.setenv("OLLAMA_HOST", llm.url)
    llm.reply("ollama", ollama_text(VALID))
    gen = generate("count python files", kit)
    assert gen.tier == "ollama"
    assert llm.sent("ollama")[0]["model"] == "qwen2.5-coder:7b"  # the default model


def test_anthropic_base_url_from_environment(llm, kit, tmp_path, monkeypatch):
    write_config(tmp_path, '[inference]\norder = ["anthropic"]\n')
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm.url)
    llm.reply("anthropic", anthropic_text(VALID))
    assert generate("count python files", kit).tier == "anthropic"


def test_missing_package_is_skipped(llm, kit, tmp_path, monkeypatch):
    configure(tmp_path, llm.url)
    monkeypatch.setitem(
        sys.modules, "ollama", None
    )  # what an install without the llm extra looks like
    llm.reply("anthropic", anthropic_text(VALID))
    gen = generate("count python files", kit)
    assert gen.tier == "anthropic"
    assert (
        gen.notes[0]["unavailable"]
        and "'ollama' package is not installed" in gen.notes[0]["reason"]
    )


def test_named_providers_in_order(llm, kit, tmp_path):
    write_config(
        tmp_path,
        f"""
[inference]
order = ["small", "big"]
feedback_rounds = 0
[inference.providers.small]
kind = "ollama"
host = "{llm.url}"
model = "tiny"
[inference.providers.big]
kind = "ollama"
host = "{llm.url}"
model = "large"
""",
    )
    llm.reply("ollama", ollama_text(INVALID))
    llm.reply("ollama", ollama_text(VALID))
    gen = generate("count python files", kit)
    assert (gen.tier, gen.source) == ("big", "large")
    assert [b["model"] for b in llm.sent("ollama")] == ["tiny", "large"]


def test_hostile_reply_is_only_ever_validated(llm, kit, tmp_path):
    configure(tmp_path, llm.url, order='["ollama"]')
    llm.reply("ollama", ollama_text("__import__('os').system('id')"))
    llm.reply("ollama", ollama_text("().__class__.__bases__[0].__subclasses__()"))
    gen = generate("pwn", kit)
    assert gen.program is None
    assert all(a["errors"] for a in gen.attempts) and len(gen.attempts) == 2


def test_empty_reply_is_not_a_program(llm, kit, tmp_path):
    configure(tmp_path, llm.url, order='["ollama"]')
    llm.reply("ollama", ollama_text("```python\n```"))
    llm.reply("ollama", ollama_text(VALID))
    gen = generate("count python files", kit)
    assert gen.attempts[0]["errors"] == [{"message": "the program is empty"}]
    assert gen.program == VALID


@pytest.mark.parametrize(
    "body",
    [
        {"foo": 1},
        [1],
        "text",
        {"content": [{"type": "text"}]},
        {"message": {"role": "assistant", "content": 5}},
    ],
)
def test_malformed_bodies_fall_through(llm, kit, tmp_path, body):
    configure(tmp_path, llm.url, order='["ollama", "anthropic", "rules"]')
    llm.reply("ollama", (200, body))
    llm.reply("anthropic", (200, body))
    gen = generate("find all python files and count them", kit)
    assert gen.tier == "rules"
    assert [n["tier"] for n in gen.notes] == ["ollama", "anthropic"]
    assert all("not a" in n["reason"] and "response" in n["reason"] for n in gen.notes)
