"""The CLI as a whole: help for every subcommand, doctor and one-line errors."""

import json

import pytest
from click.testing import CliRunner

from lackjail.cli import cli
from tests.test_cli_run import lackjail

SUBCOMMANDS = [
    "run",
    "check",
    "spec",
    "kit",
    "delegate",
    "template",
    "gate",
    "serve",
    "doctor",
    "bench",
]


def test_every_subcommand_is_registered():
    assert sorted(cli.commands) == sorted(SUBCOMMANDS)


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_help_explains_each_option(name):
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    command = cli.commands[name]
    for param in command.params:
        if getattr(param, "opts", None) and param.param_type_name == "option" and not param.hidden:
            line = next((ln for ln in result.output.splitlines() if param.opts[0] in ln), "")
            assert line, f"{name} --help does not list {param.opts[0]}"


def test_group_help_documents_exit_codes():
    result = CliRunner().invoke(cli, ["--help"])
    assert (
        "Exit codes: 0 ok; 1 the program ran and failed; 2 rejected or bad input." in result.output
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
    human = lackjail("doctor")
    assert "ok   seccomp:" in human.stdout
