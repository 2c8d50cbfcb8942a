"""A model tier fails fast when it cannot answer, and never waits past its timeout."""

import json
import os
import subprocess
import sys
import time

from infer_support import anthropic_text, ollama_text, write_config

from lackjail.infer import generate, load_config

VALID = "files = find_files('**/*.py')\nlen(files)"

NO_MODEL_HERE = """
import json, sys
from lackjail.infer import generate
gen = generate("frobnicate the quux", None)
print(json.dumps({
    "notes": gen.notes,
    "imported": sorted(m for m in ("anthropic", "openai", "ollama", "httpx") if m in sys.modules),
}))
"""


def test_without_a_key_or_a_server_no_client_is_even_imported(tmp_path, closed_port):
    """The default tiers with no key set and no Ollama here: each is skipped before its client
    (~1 s for anthropic's) is imported."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "OLLAMA_"))
    }
    env["OLLAMA_HOST"] = f"http://127.0.0.1:{closed_port}"
    proc = subprocess.run(
        [sys.executable, "-c", NO_MODEL_HERE],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["imported"] == []
    reasons = {n["tier"]: n["reason"] for n in out["notes"]}
    assert reasons["anthropic"] == "ANTHROPIC_API_KEY is not set"
    assert reasons["ollama"] == f"no Ollama server answers at http://127.0.0.1:{closed_port}"


def test_a_hung_server_fails_within_the_provider_timeout_despite_retries(
    llm, kit, tmp_path, monkeypatch
):
    """The client retries a timed-out request (max_retries): the tier's timeout bounds the whole
    call, not each try."""
    write_config(
        tmp_path,
        '[inference]\norder = ["anthropic"]\nprovider_timeout = 1\n'
        f'[inference.providers.anthropic]\nbase_url = "{llm.url}"\nmax_retries = 8\n',
    )
    for _ in range(9):
        llm.reply("anthropic", anthropic_text(VALID), delay=30)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    started = time.monotonic()
    gen = generate("count python files", kit)
    assert time.monotonic() - started < 8  # 9 tries of 1 s each, with back-off, would be more
    assert gen.program is None
    assert "did not answer within 1s" in gen.notes[0]["reason"]


def test_provider_timeout_is_every_tier_s_default_and_its_own_wins(tmp_path):
    write_config(
        tmp_path,
        '[inference]\norder = ["ollama", "anthropic"]\nprovider_timeout = 7\n'
        "[inference.providers.anthropic]\ntimeout = 3\n",
    )
    config = load_config(tmp_path)
    assert config.providers["ollama"].timeout == 7.0
    assert config.providers["anthropic"].timeout == 3.0
    flagged = config.with_provider_timeout(0.5)
    assert {p.timeout for p in flagged.providers.values()} == {0.5}
    assert all(p.connect_timeout <= 0.5 for p in flagged.providers.values())


def test_delegate_says_what_it_waits_for_and_gives_up_in_time(llm, tmp_path):
    from click.testing import CliRunner

    from lackjail.cli.delegate import delegate

    write_config(
        tmp_path,
        f'[inference]\norder = ["ollama"]\n[inference.providers.ollama]\nhost = "{llm.url}"\n',
    )
    llm.reply("ollama", ollama_text(VALID), delay=30)
    started = time.monotonic()
    result = CliRunner().invoke(
        delegate,
        ["count python files", "--kit", "readonly", "--no-run", "--provider-timeout", "1"],
        catch_exceptions=False,
    )
    assert time.monotonic() - started < 15
    assert result.exit_code == 2
    assert "asking ollama (qwen2.5-coder:7b), up to 1 s" in result.stderr
    assert "did not answer within 1s" in result.stderr


def test_a_bad_provider_timeout_is_a_usage_error(tmp_path):
    from click.testing import CliRunner

    from lackjail.cli.delegate import delegate

    result = CliRunner().invoke(delegate, ["x", "--provider-timeout", "0"])
    assert result.exit_code == 2 and "--provider-timeout" in result.output
