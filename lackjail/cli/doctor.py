"""`lackjail doctor`: what this host supports for jails, and why."""

import click

from lackjail.cli.common import EXIT_FAILED, EXIT_OK, Command, emit_json, leave
from lackjail.cli.output import verdict


@click.command(cls=Command)
@click.option("--json", "as_json", is_flag=True, help="Print the checks as one JSON object.")
def doctor(as_json):
    """Check the nsjail binary and its libraries, namespaces, seccomp and cgroups.

    Exit 0 when programs can run under nsjail, 1 when only a weaker level (or none) is available.

    \b
    Examples:
      lackjail doctor
      lackjail doctor --json
    """
    from lackjail.doctor import report

    checks = report()
    level_ok = checks[-2]["ok"]
    if as_json:
        emit_json({"checks": checks, "nsjail": level_ok})
    else:
        for check in checks:
            mark = verdict("ok  ", True) if check["ok"] else verdict("FAIL", False)
            click.echo(f"{mark} {check['name']}: {check['detail']}")
    leave(EXIT_OK if level_ok else EXIT_FAILED)
