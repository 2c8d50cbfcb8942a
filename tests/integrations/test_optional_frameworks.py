"""The agent frameworks are optional extras: the core never imports them, and an adapter whose
framework is missing says which extra to install."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = {  # adapter module -> (the framework's top-level module, the extra)
    "smolagents": ("smolagents", "smolagents"),
    "pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "langchain": ("langchain_core", "langchain"),
    "openai_agents": ("agents", "openai-agents"),
}


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_core_and_its_front_ends_never_import_a_framework():
    tops = sorted(top for top, _ in FRAMEWORKS.values())
    probe = (
        "import json, sys\n"
        "import lackjail, lackjail.api, lackjail.cli, lackjail.mcp, lackjail.integrations\n"
        "lackjail.prompt(kit='files'); lackjail.check('x = 1', kit='files')\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {tops!r})))\n"
    )
    proc = python(probe)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


@pytest.mark.parametrize("adapter", sorted(FRAMEWORKS))
def test_an_adapter_without_its_framework_names_the_extra(adapter):
    top, extra = FRAMEWORKS[adapter]
    probe = (
        f"import sys; sys.modules[{top!r}] = None  # as if it were not installed\n"
        f"import lackjail.integrations.{adapter}\n"
    )
    proc = python(probe)
    assert proc.returncode == 1
    assert f"pip install 'lackjail[{extra}]'" in proc.stderr.splitlines()[-1]
