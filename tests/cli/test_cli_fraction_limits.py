"""A workspace may tighten CPU seconds to a fraction: 0.5 s is kept (and said) as 0.5 s, never
cut to 0 s, which meant no CPU timer at all; other limits are whole numbers."""

import json

import pytest
from cli_support import lackjail

from lackjail.cli.options import Shared, setup
from lackjail.policy import PolicyError, policy_from_dict

SPIN = "x = 0\nwhile True:\n    x = x + 1\n"


def workspace(tmp_path, limits: str):
    (tmp_path / ".lackjail").mkdir()
    (tmp_path / ".lackjail" / "config.toml").write_text(f"[limits]\n{limits}\n")
    return tmp_path


def test_a_half_second_is_kept(tmp_path, home):
    ws = workspace(tmp_path, "cpu_s = 0.5")
    assert setup(Shared(workspace=str(ws))).policy.limits.cpu_s == 0.5
    assert policy_from_dict({"limits": {"cpu_s": 1.5}}).limits.cpu_s == 1.5
    with pytest.raises(PolicyError, match="limits.cpu_s' must be a positive number"):
        policy_from_dict({"limits": {"cpu_s": 0}})


def test_other_limits_are_whole_numbers(tmp_path, home):
    ws = workspace(tmp_path, "memory_mb = 10.5")
    proc = lackjail("check", "-", "--workspace", str(ws), stdin="1")
    assert proc.returncode == 2 and "memory_mb = 10.5; use a whole number" in proc.stderr


def test_the_run_stops_at_half_a_cpu_second_and_says_so(tmp_path, home, require_nsjail):
    ws = workspace(tmp_path, "cpu_s = 0.5")
    proc = lackjail("run", "-", "--json", "--language", "extended", stdin=SPIN, cwd=ws,
                    env={"HOME": str(home)})  # fmt: skip
    out = json.loads(proc.stdout)
    assert out["status"] == "timeout", out
    assert out["errors"][0]["message"] == "CPU time limit of 0.5 s exceeded"
    assert out["stats"]["cpu_ms"] < 950  # CPU time, not wall: the timer fired at 0.5 s
