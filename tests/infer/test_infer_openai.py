"""The openai tier: an OpenAI-compatible server (vLLM, LM Studio, llama.cpp, OpenAI) through the
real `openai` client, against a loopback server."""

import pytest
from infer_support import openai_error, openai_text, write_config

from lackjail.infer import generate, load_config

VALID = "files = find_files('**/*.py')\nlen(files)"
INVALID = "import os\nos.listdir('.')"


def configure(root, url, extra=""):
    write_config(
        root,
        f"""
[inference]
order = ["local"]

[inference.providers.local]
kind = "openai"
base_url = "{url}/v1"
model = "qwen-coder"
api_key_env = "LOCAL_LLM_KEY"
max_retries = 0
{extra}
""",
    )


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("LOCAL_LLM_KEY", "sk-local-test")


def test_a_program_from_an_openai_compatible_server(llm, kit, tmp_path):
    configure(tmp_path, llm.url, "temperature = 0.3\nmax_tokens = 512")
    llm.reply("openai", openai_text(f"Here it is:\n```python\n{VALID}\n```"))
    gen = generate("count the python files", kit)
    assert (gen.program, gen.tier, gen.source) == (VALID, "local", "qwen-coder")
    [sent] = llm.sent("openai")
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("qwen-coder", 0.3, 512)
    system, user = sent["messages"]
    assert system["role"] == "system" and "find_files(pattern: str)" in system["content"]
    assert user["role"] == "user" and "count the python files" in user["content"]
    [(_, headers)] = llm.headers
    sent_key = {k.lower(): v for k, v in headers.items()}["authorization"]
    assert sent_key == "Bearer sk-local-test"  # the key the config named


def test_the_validator_s_errors_go_back_to_the_model(llm, kit, tmp_path):
    configure(tmp_path, llm.url)
    llm.reply("openai", openai_text(INVALID))
    llm.reply("openai", openai_text(VALID))
    gen = generate("count the python files", kit)
    assert gen.program == VALID
    roles = [m["role"] for m in llm.sent("openai")[1]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


def test_without_its_key_the_tier_is_skipped_before_any_request(llm, kit, tmp_path, monkeypatch):
    configure(tmp_path, llm.url)
    monkeypatch.delenv("LOCAL_LLM_KEY")
    gen = generate("count the python files", kit)
    assert gen.program is None and llm.requests == []
    assert gen.notes == [
        {
            "tier": "local",
            "reason": "LOCAL_LLM_KEY is not set (the key for local)",
            "unavailable": True,
        }
    ]


@pytest.mark.parametrize(
    ("reply", "words", "unavailable"),
    [
        (openai_error(401, "bad key"), "refused the key in LOCAL_LLM_KEY", True),
        (openai_error(404, "no such model"), "has no model 'qwen-coder'", True),
        (openai_error(503, "overloaded"), "answered 503: overloaded", False),
        ((200, {"object": "chat.completion", "choices": []}), "not a chat completion", False),
    ],
)
def test_server_failures_are_notes(llm, kit, tmp_path, reply, words, unavailable):
    configure(tmp_path, llm.url)
    llm.reply("openai", reply)
    gen = generate("count the python files", kit)
    assert gen.program is None
    assert words in gen.notes[0]["reason"] and gen.notes[0]["unavailable"] is unavailable


def test_the_key_never_goes_over_plain_http_to_another_host(llm, kit, tmp_path):
    write_config(
        tmp_path,
        '[inference]\norder = ["local"]\n[inference.providers.local]\nkind = "openai"\n'
        'base_url = "http://10.255.255.1:8000/v1"\napi_key_env = "LOCAL_LLM_KEY"\n',
    )
    gen = generate("count the python files", kit)
    assert gen.program is None
    assert "refusing to send LOCAL_LLM_KEY" in gen.notes[0]["reason"]


def test_a_workspace_chooses_neither_the_server_nor_the_key(tmp_path, monkeypatch):
    """Its base_url and api_key_env are dropped with notes: a workspace that named
    AWS_SECRET_ACCESS_KEY would otherwise have it sent to OpenAI."""
    (tmp_path / ".lackjail").mkdir()
    (tmp_path / ".lackjail" / "config.toml").write_text(
        '[inference]\norder = ["gpt"]\n[inference.providers.gpt]\nkind = "openai"\n'
        'base_url = "http://127.0.0.1:1/v1"\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n'
        'model = "m"\n'
    )
    config = load_config(tmp_path)
    gpt = config.providers["gpt"]
    assert (gpt.base_url, gpt.api_key_env, gpt.model) == (None, "OPENAI_API_KEY", "m")
    assert len(config.notes) == 2 and all("may not choose" in n for n in config.notes)
