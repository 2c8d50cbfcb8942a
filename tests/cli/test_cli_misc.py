"""The CLI as a whole: help for every subcommand, doctor and one-line errors."""

import json

import pytest
from cli_support import lackjail
from click.testing import CliRunner

from lackjail.cli import COMMANDS, cli

SUBCOMMANDS = [
    "run",
    "check",
    "spec",
    "kit",
    "delegate",
    "template",
    "gate",
    "serve",
    "server",
    "doctor",
    "bench",
    "batch",
    "init",
    "mcp-config",
]


def test_every_subcommand_is_registered():
    assert sorted(cli.list_commands(None)) == sorted(SUBCOMMANDS)


def test_subcommands_load_lazily():
    """`lackjail --help` and `lackjail run` import no other subcommand's module."""
    code = (
        "import sys\n"
        "from lackjail.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('lackjail.cli.')))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('lackjail.gate', 'mcp', "
        "'lackjail.bench', 'lackjail.infer'))))\n"
    )
    import subprocess
    import sys

    from cli_support import cli_env

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=60
    ).stdout.splitlines()
    assert out[-2] == "['lackjail.cli.common']"
    assert out[-1] == "[]"
    assert set(COMMANDS) == set(SUBCOMMANDS)


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_help_explains_each_option(name):
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    command = cli.get_command(None, name)
    for param in command.params:
        if getattr(param, "opts", None) and param.param_type_name == "option" and not param.hidden:
            line = next((ln for ln in result.output.splitlines() if param.opts[0] in ln), "")
            assert line, f"{name} --help does not list {param.opts[0]}"


def test_group_help_documents_exit_codes():
    result = CliRunner().invoke(cli, ["--help"])
    assert (
        "Exit codes: 0 ok; 1 the program ran and failed; 2 rejected or bad input; 130 interrupted."
        in " ".join(result.output.split())
    )


def test_unknown_subcommand_is_one_line_exit_2():
    proc = lackjail("frobnicate")
    assert proc.returncode == 2
    assert "No such command 'frobnicate'" in proc.stderr and "Traceback" not in proc.stderr


def test_doctor_reports_nsjail(require_nsjail):
    proc = lackjail("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["nsjail binary"]["ok"] and checks["namespaces (nsjail image)"]["ok"]
    assert checks["isolation level"]["detail"].startswith("nsjail")
    from lackjail.pool import interpreter

    # the interpreter the jail runs, as found from its own files
    assert checks["interpreter"]["ok"]
    assert checks["interpreter"]["detail"].startswith(interpreter.current().executable)
    assert checks["namespaces"]["ok"] and "Landlock" in checks["landlock"]["detail"]
    human = lackjail("doctor")
    assert "ok   seccomp:" in human.stdout
