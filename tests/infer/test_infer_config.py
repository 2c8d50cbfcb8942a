"""`.lackjail/config.toml` [inference]: defaults, every key checked, errors that name the key and
the fix.
"""

import pytest
from infer_support import write_config

from lackjail.infer import ConfigError, InferenceConfig, load_config


def test_defaults_without_a_file(tmp_path):
    config = load_config(tmp_path)
    assert config.order == ("templates", "rules", "ollama", "anthropic")
    assert config.feedback_rounds == 1
    ollama, anthropic = config.providers["ollama"], config.providers["anthropic"]
    assert (ollama.kind, ollama.connect_timeout, ollama.host) == ("ollama", 2.0, None)
    assert (anthropic.kind, anthropic.model, anthropic.base_url) == (
        "anthropic",
        "claude-haiku-4-5",
        None,
    )


def test_file_settings(tmp_path):
    write_config(
        tmp_path,
        """
[inference]
order = ["rules", "local"]
feedback_rounds = 2
[inference.providers.local]
kind = "ollama"
host = "http://gpu:11434"
model = "qwen2.5-coder:1.5b"
temperature = 0.3
keep_alive = "10m"
timeout = 30
connect_timeout = 0.5
""",
    )
    config = load_config(tmp_path)
    assert config.order == ("rules", "local") and config.feedback_rounds == 2
    local = config.providers["local"]
    assert (
        local.kind,
        local.host,
        local.model,
        local.temperature,
        local.keep_alive,
        local.timeout,
        local.connect_timeout,
    ) == ("ollama", "http://gpu:11434", "qwen2.5-coder:1.5b", 0.3, "10m", 30.0, 0.5)
    assert list(config.providers) == ["local"]


@pytest.mark.parametrize(
    "table, message",
    [
        (
            {"order": ["templates", "gpt"]},
            "unknown tier 'gpt' in 'inference.order'; use templates, rules, ollama, anthropic, "
            "openai, or define [inference.providers.gpt]",
        ),
        ({"order": []}, "'inference.order' must be a list of tier names"),
        ({"order": "rules"}, "'inference.order' must be a list of tier names"),
        ({"order": ["rules", "rules"]}, "names 'rules' twice"),
        ({"ordre": ["rules"]}, "unknown key 'inference.ordre'; known keys: order"),
        ({"feedback_rounds": -1}, "'inference.feedback_rounds' must be an integer from 0 to 5"),
        (
            {"providers": {"ollama": {"hots": "x"}}},
            "unknown key 'inference.providers.ollama.hots'; known keys for an ollama provider: ",
        ),
        (
            {"providers": {"ollama": {"timeout": 0}}},
            "'inference.providers.ollama.timeout' must be a number of seconds > 0, "
            "e.g. timeout = 60",
        ),
        (
            {"providers": {"ollama": {"timeout": True}}},
            "'inference.providers.ollama.timeout' must be a number of seconds",
        ),
        (
            {"providers": {"anthropic": {"temperature": 0.2}}},
            "unknown key 'inference.providers.anthropic.temperature'",
        ),
        (
            {"providers": {"anthropic": {"max_retries": -1}}},
            "'inference.providers.anthropic.max_retries' must be an integer >= 0",
        ),
        (
            {"providers": {"anthropic": {"model": ""}}},
            "'inference.providers.anthropic.model' must be a non-empty string",
        ),
        (
            {"order": ["x"], "providers": {"x": {"kind": "gpt"}}},
            '\'inference.providers.x.kind\' must be "ollama", "anthropic" or "openai"',
        ),
        (
            {"order": ["x"], "providers": {"x": {"kind": "openai", "api_key_env": "A-B"}}},
            "'inference.providers.x.api_key_env' must be the name of an environment variable",
        ),
        (
            {"order": ["x"], "providers": {"x": {"kind": "openai", "host": "h"}}},
            "unknown key 'inference.providers.x.host'; known keys for an openai provider",
        ),
        ({"provider_timeout": 0}, "'inference.provider_timeout' must be a number of seconds > 0"),
        ({"providers": {"rules": {}}}, "'rules' is a built-in tier"),
        ({"providers": {"ollama": "fast"}}, "'inference.providers' must hold tables"),
    ],
)
def test_bad_settings_name_the_key_and_the_fix(table, message):
    with pytest.raises(ConfigError) as caught:
        InferenceConfig.from_dict(table, "cfg.toml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("cfg.toml: ")


def test_bad_toml_names_the_file(tmp_path):
    write_config(tmp_path, "[inference\norder = 1")
    with pytest.raises(ConfigError, match=r"config\.toml is not valid TOML"):
        load_config(tmp_path)


def test_inference_must_be_a_table(tmp_path):
    write_config(tmp_path, 'inference = "fast"')
    with pytest.raises(ConfigError, match=r"'inference' must be a table"):
        load_config(tmp_path)


def test_other_sections_are_not_ours(tmp_path):
    write_config(tmp_path, '[kit]\nname = "files"\n[inference]\norder = ["rules"]\n')
    assert load_config(tmp_path).order == ("rules",)
