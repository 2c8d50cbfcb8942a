"""`denied` only for real escapes. What the runtime loads lazily
(every codec of the standard `encodings` package) works in the jail, or fails
with a clear error; it never kills the child as a forbidden system call."""

import encodings
import os

import pytest

from lackjail.api import Jail

CODECS = sorted(
    os.path.splitext(entry)[0]
    for entry in os.listdir(encodings.__path__[0])
    if entry.endswith(".py") and entry not in ("__init__.py", "aliases.py")
)


@pytest.fixture(scope="module")
def jail(require_nsjail):
    with Jail(workers=2) as j:
        yield j


def test_every_codec_of_the_standard_library_is_no_escape(jail):
    verdicts = {}
    for name in CODECS:
        r = jail.run(f"b = 'x'.encode({name!r})\nt = b.decode({name!r})\n[b, t]")
        verdicts[name] = (r.status, r.errors[0]["message"] if r.errors else "")
    denied = {n: v for n, v in verdicts.items() if v[0] == "denied"}
    assert not denied, denied
    assert {v[0] for v in verdicts.values()} <= {"ok", "error"}, verdicts
    for name in ("cp1252", "latin_1", "utf_16", "shift_jis", "idna", "punycode", "koi8_r"):
        assert verdicts[name][0] == "ok", (name, verdicts[name])
    # bytes-to-bytes codecs are not text encodings: a clear error, not an escape
    assert "not a text encoding" in verdicts["base64_codec"][1]


@pytest.mark.parametrize("name", ["no-such-codec", "mbcs", "oem", "x" * 200])
def test_unknown_codecs_are_a_lookup_error(jail, name):
    r = jail.run(f"'x'.encode({name!r})")
    assert r.status == "error" and "LookupError" in r.errors[0]["message"], r.errors


def test_zygote_stays_small_with_every_codec_loaded(jail):
    """Preloading costs memory in each zygote: keep it within reason (the report
    states the figure)."""
    import psutil

    sizes = []
    for pid in jail.pool.pids():
        zygotes = psutil.Process(pid).children()
        sizes += [z.memory_info().rss for z in zygotes]
    assert sizes and max(sizes) < 40 << 20, sizes
