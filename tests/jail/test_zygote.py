"""What the zygote does before its first fork: the codecs it loads (and the clear
error for the others) and the heap it hands its children (immortal, so shared)."""

import subprocess
import sys
from pathlib import Path

import pytest

from lackjail.api import Jail
from lackjail.worker import textcodecs

ROOT = str(Path(__file__).resolve().parents[2])

HEAP = """
import gc, sys
sys.path.insert(0, ROOT)
from lackjail.worker import zygote
def old(): return 1.5 * 2
TEXT = "".join(["not ", "interned"])
marked = zygote.immortalize_heap()
young = [object() for _ in range(3)]
assert marked > 1000, marked
assert sys.getrefcount(old) == 0xFFFFFFFF, sys.getrefcount(old)
assert sys.getrefcount(zygote.Zygote) == 0xFFFFFFFF
assert sys.getrefcount(old.__code__) == 0xFFFFFFFF  # untracked, reached from a function
assert sys.getrefcount(TEXT) == 0xFFFFFFFF  # untracked, a module global
assert sys.getrefcount(young) < 10 and sys.getrefcount(young[0]) < 10
refs = [old] * 1000  # increments on an immortal object store nothing
del refs
assert sys.getrefcount(old) == 0xFFFFFFFF and old() == 3.0
gc.collect()
print("ok")
""".replace("ROOT", repr(ROOT))


def test_the_zygote_heap_is_immortal_and_still_works():
    proc = subprocess.run(
        [sys.executable, "-I", "-B", "-c", HEAP], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.fixture(scope="module")
def jail(require_nsjail):
    with Jail(workers=1) as j:
        yield j


@pytest.mark.parametrize("name", ["gbk", "cp1250", "mac_roman", "CP437"])
def test_a_codec_not_loaded_says_which_are(jail, name):
    r = jail.run(f"'x'.encode({name!r})")
    assert r.status == "error", r
    message = r.errors[0]["message"]
    assert message.startswith("LookupError:") and "not available in the jail" in message
    assert all(codec in message for codec in textcodecs.LOADED)


@pytest.mark.parametrize("name", ["base64", "hex", "rot13", "zlib", "bz2_codec", "uu"])
def test_bytes_codecs_are_not_text_encodings(jail, name):
    r = jail.run(f"b'x'.decode({name!r})")
    assert r.status == "error" and "is not a text encoding" in r.errors[0]["message"], r


@pytest.mark.parametrize("name", textcodecs.LOADED)
def test_every_loaded_codec_round_trips(jail, name):
    text = "caf\u00e9" if name not in ("ascii", "idna", "koi8_r", "cp1251", "shift_jis") else "cafe"
    r = jail.run(f"t = {text!r}\nt.encode({name!r}).decode({name!r}) == t")
    assert r.status == "ok" and r.value is True, (name, r)
