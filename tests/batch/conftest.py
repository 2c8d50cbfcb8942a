"""Fixtures for the batch tests: a network namespace of its own for anything that talks to Ray."""

import os
import shutil
import subprocess

import pytest


@pytest.fixture(scope="session")
def own_netns() -> list:
    """The command prefix that runs a child in a new network namespace with only loopback up.

    Ray binds to the machine's interface address even when told 127.0.0.1 (and
    dials it for a loopback address); in a namespace of its own it uses
    127.0.0.1 and nothing leaves the namespace. As root: `unshare -n`.
    Otherwise `unshare -rn` (root in a new user namespace, which may bring
    loopback up), then back to our own uid in a nested user namespace, so the
    jails start as they do for an ordinary user.
    """
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("unshare and ip (util-linux, iproute2) are needed to isolate Ray's network")
    root = os.geteuid() == 0
    prefix = ["unshare", "-n" if root else "-rn", "--", "sh", "-c"]
    back = "" if root else f"unshare --map-user={os.geteuid()} --map-group={os.getegid()} -- "
    probe = subprocess.run(
        [*prefix, f"ip link set lo up && exec {back}true"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        pytest.skip(
            f"cannot make a network namespace here ({' '.join(prefix[:2])}): {probe.stderr.strip()}"
        )
    return [*prefix, f'ip link set lo up && exec {back}"$@"', "sh"]
