"""What a server's waiting process computed ahead (`serve._fill_caches`, with the server's
environment) never stands in for what a command computes from its client's: the command gets
what it would get in its own process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from lackjail.pool import image as images
from lackjail.pool import interpreter, isolation
from lackjail.server import serve

SHOW_CONFIG = (
    "from lackjail.pool import isolation; print(isolation.nsjail_launcher({!r}).config_text)"
)


def _clear_caches() -> None:
    isolation._nsjail_config_text.cache_clear()
    interpreter._resolver.cache_clear()


def test_the_jails_mounts_follow_the_clients_library_path(tmp_path, monkeypatch, require_nsjail):
    """A shared object the jail mounts, shadowed in a folder of the client's LD_LIBRARY_PATH, is
    mounted from there (as the loader would load it), though the waiting process made the same
    nsjail configuration before with the server's LD_LIBRARY_PATH (none)."""
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the bundled defaults
    image = images.load_image("python312")
    found = {os.path.basename(b.dst): b.src for b in images.library_binds(image)}
    assert "libz.so.1" in found, found  # the jail's zlib module needs it
    shadow = tmp_path / "libs"
    shadow.mkdir()
    shutil.copy(found["libz.so.1"], shadow / "libz.so.1")
    made = []
    real = isolation.nsjail_launcher

    def recording(args, *rest, **kwargs):
        made.append(args)
        return real(args, *rest, **kwargs)

    _clear_caches()  # as in a server that has run nothing yet
    monkeypatch.setattr(isolation, "nsjail_launcher", recording)
    try:
        serve._fill_caches()  # the waiting process, with the server's environment
        assert len(made) == 1
        monkeypatch.setenv("LD_LIBRARY_PATH", str(shadow))  # the client's, as `_adopt` takes it
        launcher = real(made[0])
        launcher.close()
    finally:
        _clear_caches()
    alone = subprocess.run(
        [sys.executable, "-c", SHOW_CONFIG.format(made[0])],
        capture_output=True,
        text=True,
        env={**os.environ, "LD_LIBRARY_PATH": str(shadow)},
        check=True,
    ).stdout
    assert f'"{shadow / "libz.so.1"}"' in alone  # the command in its own process mounts it
    assert launcher.config_text + "\n" == alone
