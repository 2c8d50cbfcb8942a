"""One root for every error lackjail raises to a caller, two families, one exit-code mapping."""

import importlib
import inspect
import pkgutil

import click
import pytest

import lackjail
from lackjail.cli import main
from lackjail.errors import HostError, InputError, LackjailError, ToolCallError

# What the jail mounts cannot import lackjail.errors; their errors never reach a caller.
JAIL_SIDE = ("lackjail.lang", "lackjail.worker", "lackjail.protocol", "lackjail.plain")
# The `lackjail run` thin client's wire imports nothing it can spare (start-up time); its error
# never reaches a caller either (the server hangs up on a request it cannot read).
THIN_CLIENT = ("lackjail.server.wire",)


def _modules():
    for info in pkgutil.walk_packages(lackjail.__path__, "lackjail."):
        if info.name.startswith(JAIL_SIDE + THIN_CLIENT) or info.name.endswith("__main__"):
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError as exc:  # an optional extra (ray, an agent framework) is missing
            assert not (exc.name or "").startswith("lackjail"), exc


def test_every_error_lackjail_defines_is_a_lackjail_error_of_one_family():
    found = []
    for module in _modules():
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, BaseException):
                continue
            if name.startswith("_") or issubclass(cls, click.ClickException):
                continue  # private to its module, or the CLI's carrier of an exit code
            found.append(cls)
            families = (InputError, HostError, ToolCallError)
            assert issubclass(cls, families) or cls in (LackjailError,), f"{module.__name__}.{name}"
    assert len(found) >= 20, found  # the walk really saw the package


@pytest.mark.parametrize(
    "path, name, family, older",
    [
        ("lackjail.policy", "PolicyError", InputError, ValueError),
        ("lackjail.errors", "KitError", InputError, ValueError),
        ("lackjail.batch", "BatchInputError", InputError, ValueError),
        ("lackjail.pool", "PoolError", HostError, RuntimeError),
        ("lackjail.pool", "IsolationError", HostError, RuntimeError),
        ("lackjail.workspace.beneath", "Escape", InputError, OSError),
    ],
)
def test_each_error_keeps_its_older_base(path, name, family, older):
    cls = getattr(importlib.import_module(path), name)
    assert issubclass(cls, family) and issubclass(cls, older)


def test_the_root_and_its_families_are_exported_with_exit_codes():
    assert lackjail.LackjailError is LackjailError
    assert (lackjail.InputError, lackjail.HostError) == (InputError, HostError)
    assert InputError("x").exit_code == 2 and HostError("x").exit_code == 2
    assert not issubclass(InputError, HostError) and not issubclass(HostError, InputError)


def test_the_cli_turns_a_bad_input_into_one_error_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["kit", "info", "no-such-kit", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert err.startswith("Error: ") and err.count("\n") == 1 and "no-such-kit" in err


def test_the_cli_turns_a_host_failure_into_one_error_line(tmp_path, capsys, monkeypatch):
    from lackjail import api
    from lackjail.pool import IsolationError

    def refuse(*args, **kwargs):
        raise IsolationError("this host cannot isolate as the policy demands")

    monkeypatch.setattr(api.Jail, "__init__", refuse)
    program = tmp_path / "p.lackpy"
    program.write_text("1\n")
    with pytest.raises(SystemExit) as done:
        main(["run", str(program), "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert done.value.code == HostError.exit_code
    assert err == "Error: this host cannot isolate as the policy demands\n"
