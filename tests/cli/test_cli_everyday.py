"""Everyday features: init, mcp-config, --version, --quiet/--verbose, colour and NO_COLOR, examples
in every --help, shell completion of kits and policies, limit flags that only tighten, and the
user's and the workspace's config."""

import json
import shlex
import subprocess
import sys

import pytest
from cli_support import cli_env, lackjail, lackjail_process, on_a_terminal
from click.testing import CliRunner

from lackjail.cli import COMMANDS, cli

SPIN = "n = 0\nfor i in range(1000000000000):\n    n = n + 1\n"


def invoke(*args, stdin=None):
    return CliRunner().invoke(cli, list(args), input=stdin)


# --- init and mcp-config -----------------------------------------------------------------------


def test_init_creates_a_config_a_kit_and_a_template_and_never_overwrites(tmp_path, home):
    made = invoke("init", "--workspace", str(tmp_path))
    assert made.exit_code == 0, made.output
    folder = tmp_path / ".lackjail"
    for path in ("config.toml", "kits/project.kit", "templates/count_lines.tmpl"):
        assert (folder / path).is_file(), path
        assert f"created .lackjail/{path}" in made.output
    (folder / "config.toml").write_text("# mine\n")
    again = invoke("init", "--workspace", str(tmp_path))
    assert again.exit_code == 2 and "never overwrites" in again.output
    assert (folder / "config.toml").read_text() == "# mine\n"


def test_the_initialised_project_works(tmp_path, home, require_nsjail):
    assert invoke("init", "--workspace", str(tmp_path)).exit_code == 0
    (tmp_path / "notes.txt").write_text("a\nb\n")
    # the config chose the project kit: read_file is callable without --kit
    proc = lackjail("run", "-", "--json", stdin='read_file("notes.txt")', cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["value"] == "a\nb\n"
    proc = lackjail("delegate", "count the lines of notes.txt", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["tier"] == "templates" and out["result"]["value"] == 2


def test_mcp_config_prints_a_block_that_starts_this_checkouts_server(tmp_path):
    shown = invoke("mcp-config", "--workspace", str(tmp_path), "--kit", "files")
    assert shown.exit_code == 0
    server = json.loads(shown.output)["mcpServers"]["lackjail"]
    assert server["command"] == sys.executable
    assert server["args"][:3] == ["-m", "lackjail.cli", "serve"]
    assert server["args"][server["args"].index("--workspace") + 1] == str(tmp_path)
    assert server["args"][server["args"].index("--kit") + 1] == "files"
    helped = subprocess.run(
        [server["command"], *server["args"][:3], "--help"],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
    )
    assert helped.returncode == 0 and "MCP client" in helped.stdout


def test_mcp_config_for_cursor_and_claude_code_starts_the_same_server(tmp_path):
    folder = tmp_path / "my project"  # a space: the command line must quote it
    folder.mkdir()
    common = ("mcp-config", "--workspace", str(folder), "--kit", "files")
    desktop = json.loads(invoke(*common).output)
    cursor = invoke(*common, "--client", "cursor")
    assert cursor.exit_code == 0 and json.loads(cursor.output) == desktop
    server = desktop["mcpServers"]["lackjail"]
    code = invoke(*common, "--client", "claude-code", "--name", "jail")
    assert code.exit_code == 0
    line = shlex.split(code.output)
    assert line[:7] == ["claude", "mcp", "add", "--transport", "stdio", "jail", "--"]
    assert line[7:] == [server["command"], *server["args"]]
    assert server["args"][server["args"].index("--workspace") + 1] == str(folder)
    bad = invoke(*common, "--client", "vscode")
    assert bad.exit_code == 2 and "claude-desktop" in bad.output


# --- help, verbosity, colour, completion --------------------------------------------------------


# batch belongs to its owner, who was asked to add examples
@pytest.mark.parametrize("name", sorted(set(COMMANDS) - {"batch"}))
def test_every_help_has_examples(name):
    result = invoke(name, "--help")
    assert result.exit_code == 0 and "Examples:" in result.output, name
    assert "Examples:" in invoke("--help").output


def test_quiet_and_verbose(tmp_path, require_nsjail):
    """The process's own stderr: nothing but what the flags ask for (no jail's warnings)."""
    verbose = lackjail_process("-v", "run", "-", stdin="1 + 1")
    assert verbose.returncode == 0 and "isolation nsjail" in verbose.stderr
    plain = lackjail_process("run", "-", stdin="1 + 1")
    assert plain.stderr == "" and plain.stdout == "2\n"
    (tmp_path / ".lackjail" / "templates").mkdir(parents=True)
    (tmp_path / "t.lackpy").write_text("41 + 1\n")
    assert (
        lackjail_process(
            "template", "create", "t.lackpy", "--name", "t", "--pattern", "answer", cwd=tmp_path
        ).returncode
        == 0
    )
    loud = lackjail_process("delegate", "answer", cwd=tmp_path)
    assert "# tier: templates" in loud.stderr and loud.stdout == "42\n"
    quiet = lackjail_process("-q", "delegate", "answer", cwd=tmp_path)
    assert quiet.stderr == "" and quiet.stdout == "42\n"
    both = lackjail_process("-q", "-v", "spec")
    assert both.returncode == 2 and "disagree" in both.stderr


def test_colour_on_a_terminal_unless_no_color(tmp_path):
    (tmp_path / "good.lackpy").write_text("1\n")
    (tmp_path / "bad.lackpy").write_text("import os\n")
    coloured, _ = on_a_terminal(["gate", "."], tmp_path, NO_COLOR="")
    assert "\x1b[32mPASS\x1b[0m" in coloured and "\x1b[31m\x1b[1mFAIL" in coloured
    plain, _ = on_a_terminal(["gate", "."], tmp_path, NO_COLOR="1")
    assert "PASS  good.lackpy" in plain and "\x1b[" not in plain
    piped = lackjail("gate", ".", cwd=tmp_path)  # not a terminal: no colour either
    assert "\x1b[" not in piped.stdout and "FAIL  bad.lackpy" in piped.stdout


@pytest.mark.parametrize(
    "words, expected",
    [
        ("lackjail run x.lackpy --kit re", "readonly"),
        ("lackjail check x.lackpy --kit fi", "files"),
        ("lackjail gate --policy st", "strict"),
        ("lackjail run x.lackpy --policy c", "ci"),
    ],
)
def test_shell_completion_completes_kits_and_policies(words, expected):
    proc = subprocess.run(
        [sys.executable, "-m", "lackjail.cli"],
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_env(
            _LACKJAIL_COMPLETE="bash_complete",
            COMP_WORDS=words,
            COMP_CWORD=str(len(words.split()) - 1),
        ),
    )
    assert proc.returncode == 0, proc.stderr
    assert f"plain,{expected}" in proc.stdout.splitlines(), proc.stdout


# --- limits only tighten; configs ---------------------------------------------------------------


@pytest.mark.parametrize(
    "flag, value, says",
    [
        ("--timeout", "60", "wall_s = 60.0, above policy 'default's 10.0"),
        ("--cpu", "100", "cpu_s = 100, above policy 'default's 5"),
        ("--memory", "100000", "memory_mb = 100000, above policy 'default's 256"),
        ("--timeout", "0", "'--timeout'"),
    ],
)
def test_limit_flags_never_loosen(flag, value, says, home):
    result = invoke("run", "-", flag, value, stdin="1")
    assert result.exit_code == 2 and says in result.output


def test_limit_flags_tighten_for_one_run(home, require_nsjail):
    # the wall clock (1 s) ends the run before the policy's CPU limit (5 s) can: CPU <= wall
    proc = lackjail("run", "-", "--json", "--timeout", "1", stdin=SPIN)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and out["status"] == "timeout", out
    assert "wall-clock limit of 1 s" in out["errors"][0]["message"]
    from lackjail.cli.options import Shared, setup

    limits = setup(Shared(bounds={"cpu_s": 1, "memory_mb": 64, "wall_s": 2.5})).policy.limits
    assert (limits.cpu_s, limits.memory_mb, limits.wall_s) == (1, 64, 2.5)


def test_user_config_sets_defaults_and_flags_win(tmp_path, home, require_nsjail):
    config = home / ".config" / "lackjail" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[defaults]\nkit = "readonly"\npolicy = "strict"\n')
    (tmp_path / "a.txt").write_text("alpha")
    program = 'read_file("a.txt")'
    proc = lackjail("-v", "run", "-", stdin=program, cwd=tmp_path, env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    assert "policy strict, kit readonly" in proc.stderr
    flagged = lackjail("-v", "run", "-", "--kit", "none", stdin="1", env={"HOME": str(home)})
    assert "kit none" in flagged.stderr
    config.write_text('[defaults]\ncolour = "on"\n')
    bad = lackjail("run", "-", stdin="1", env={"HOME": str(home)})
    assert bad.returncode == 2 and "'defaults.colour' is not allowed here" in bad.stderr


def test_workspace_config_may_choose_a_kit_and_only_tighten(tmp_path, home):
    local = tmp_path / ".lackjail" / "config.toml"
    local.parent.mkdir()
    local.write_text('[defaults]\nkit = "readonly"\n[limits]\nwall_s = 2.5\n')
    from lackjail.cli.options import Shared, setup

    chosen = setup(Shared(workspace=str(tmp_path)))
    assert chosen.kit.name == "readonly" and chosen.policy.limits.wall_s == 2.5
    local.write_text('[defaults]\nlanguage = "extended"\n')  # a level, among the policy's
    assert setup(Shared(workspace=str(tmp_path))).checker.language == "extended"
    refused = invoke("check", "-", "--workspace", str(tmp_path), "--policy", "strict", stdin="1")
    assert refused.exit_code == 0  # strict allows extended
    for text, says in [
        ('[defaults]\npolicy = "mine.toml"\n', "'defaults.policy' is not allowed here"),
        ('[defaults]\nlanguage = "cobol"\n', "'defaults.language' must be one of lackpy"),
        ("[defaults]\nlanguage = 1\n", "'defaults.language' must be a non-empty string"),
        ("[limits]\nwall_s = 1000\n", "may only tighten the policy"),
        ("[limits]\nmemory_mb = -1\n", "must be a positive number"),
        ("[limits]\nnet = 1\n", "unknown key 'limits.net'"),
        ('[defaults]\nkit = "../../elsewhere/evil.kit"\n', "not a path"),
        ('[defaults]\nkit = "/etc/x"\n', "not a path"),
    ]:
        local.write_text(text)
        result = invoke("check", "-", "--workspace", str(tmp_path), stdin="1")
        assert result.exit_code == 2 and says in result.output, text


def test_init_refuses_a_lackjail_folder_that_is_a_symlink(tmp_path, home):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".lackjail").symlink_to(elsewhere)
    result = invoke("init", "--workspace", str(ws))
    assert result.exit_code == 2 and "is a symlink" in result.output
    assert list(elsewhere.iterdir()) == []


def test_a_workspace_config_that_is_a_symlink_is_refused(tmp_path, home):
    secret = tmp_path / "secret.toml"
    secret.write_text('[defaults]\nkit = "files"\n')
    ws = tmp_path / "ws"
    (ws / ".lackjail").mkdir(parents=True)
    (ws / ".lackjail" / "config.toml").symlink_to(secret)
    result = invoke("check", "-", "--workspace", str(ws), stdin="1")
    assert result.exit_code == 2 and "cannot read" in result.output
