"""The package as a user gets it: built as `make dist` builds it (sdist, then the wheel from
it), installed into a fresh venv, run in the jail.

Nothing from the source tree is on the path: the venv holds only the wheel and its
dependencies (installed from the package index as pip is configured on this machine), and the
commands run from an empty folder. The bundled policies, sandbox images and kits must come from
inside the installed package.
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DATA = [
    "lackjail/policies/*.toml",
    "lackjail/images/*",
    "lackjail/kit/kits/*.kit",
    "lackjail/kit/docs/*.md",
    "lackjail/py.typed",
]
NOT_SOURCE = (".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache")

pytestmark = pytest.mark.slow


def sh(*argv, cwd, env=None, timeout=300):
    proc = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode in (0, 1, 2), proc.stderr  # a crash is never a verdict
    return proc


def ok(proc):
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory, require_nsjail):
    """(venv, workdir): the wheel built from this tree and installed into a new venv."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy, so that the build leaves nothing in the checkout
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    # what `make dist` runs: the sdist, then the wheel built from it
    ok(sh(sys.executable, "-m", "build", "--outdir", tmp / "dist", src, cwd=tmp, timeout=600))
    (wheel,) = (tmp / "dist").glob("lackjail-*.whl")
    (sdist,) = (tmp / "dist").glob("lackjail-*.tar.gz")
    assert sdist.stat().st_size > 0
    base = getattr(sys, "_base_executable", sys.executable)  # the interpreter, not this venv
    ok(sh(base, "-m", "venv", tmp / "venv", cwd=tmp))
    venv = tmp / "venv"
    ok(sh(venv / "bin/python", "-m", "pip", "install", "-q", wheel, cwd=tmp, timeout=600))
    work = tmp / "work"
    work.mkdir()
    return wheel, venv, work


def clean_env(venv):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return env


def test_the_wheel_carries_every_bundled_data_file(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = sorted(
        str(p.relative_to(ROOT)) for pattern in PACKAGE_DATA for p in ROOT.glob(pattern)
    )
    # 3 policies, 2 image files, 3 kits and their 3 docs
    assert expected and len(expected) >= 10, expected
    assert [name for name in expected if name not in names] == []


def test_the_installed_package_is_the_wheel_not_the_checkout(installed):
    _, venv, work = installed
    proc = ok(
        sh(
            venv / "bin/python",
            "-c",
            "import lackjail; print(lackjail.__file__)",
            cwd=work,
            env=clean_env(venv),
        )
    )
    assert Path(proc.stdout.strip()).is_relative_to(venv), proc.stdout


def test_run_from_the_wheel_uses_the_bundled_policy_image_and_kit(installed):
    _, venv, work = installed
    env = clean_env(venv)
    (work / "notes.txt").write_text("one\ntwo\nthree\n")
    (work / "count.lackpy").write_text(
        "text = read_file('notes.txt')\nlines = text.splitlines()\n{'lines': len(lines), 'n': n}\n"
    )
    proc = ok(
        sh(
            venv / "bin/lackjail",
            "run",
            "count.lackpy",
            "--kit",
            "files",
            "--policy",
            "strict",
            "--param",
            "n=7",
            "--workspace",
            work,
            "--json",
            cwd=work,
            env=env,
        )
    )
    result = json.loads(proc.stdout)
    assert result["status"] == "ok", result
    assert result["value"] == {"lines": 3, "n": 7}
    assert result["isolation"] == "nsjail"
    assert [call["tool"] for call in result["trace"]] == ["read_file"]


def test_doctor_from_the_wheel_finds_the_image(installed):
    _, venv, work = installed
    proc = ok(sh(venv / "bin/lackjail", "doctor", "--json", cwd=work, env=clean_env(venv)))
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert all(c["ok"] for c in checks.values()), checks
    assert checks["isolation level"]["detail"].startswith("nsjail"), checks
