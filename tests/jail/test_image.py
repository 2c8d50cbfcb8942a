"""The sandbox image is checked key by key, like a policy: a bad key names itself; its
nsjail configuration is rendered once per process."""

import grp
import os
import pwd
from pathlib import Path

import pytest

from lackjail.pool import image as images
from lackjail.pool import isolation

GOOD = (images.IMAGE_DIR / "python312.toml").read_text(encoding="utf-8")


def test_the_bundled_image_loads_from_the_package():
    img = images.load_image("python312")
    assert img.jailroot == "/opt/lackjail" and img.data["nice_level"] == 0
    assert any(m["dst"].endswith("lackjail/plain.py") for m in img.data["mount"])


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: "extra = 1\n" + t, "unknown key 'extra'"),
        (lambda t: t.replace("uid = 65534", 'uid = "nobody"'), "key 'uid' must be a whole number"),
        (lambda t: t.replace('hostname = "lackjail"\n', ""), "key 'hostname' is missing"),
        (lambda t: t.replace('name = "python312"', 'name = "other"'), "key 'name' is 'other'"),
        (lambda t: t.replace('"cgroup"]', '"cgroup", "time"]'), "key 'namespaces' names ['time']"),
        (lambda t: t.replace('jailroot = "/opt/lackjail"', 'jailroot = "opt"'), "absolute path"),
        (
            lambda t: t.replace('dst = "/dev/null"', 'dst = "/dev/null"\nmode = 1', 1),
            "unknown key 'mount[3].mode'",
        ),
        (lambda t: t.replace("size_mb = 1\n", "size_mb = true\n", 1), "'tmpfs[0].size_mb'"),
        (lambda t: t.replace('"first-layer.kafel"', '"../x"'), "key 'seccomp'"),
        (lambda t: "symlink = 1\n" + t, "key 'symlink' must be a list of tables"),
        (lambda t: t.replace("libraries_of = [", "libraries_of = 1 # ["), "'libraries_of' must"),
        (lambda t: t.replace('libraries_at = "/', 'libraries_at = "'), "'libraries_at' must be"),
    ],
)
def test_bad_images_name_the_key(change, message):
    with pytest.raises(images.ImageError, match="sandbox image 'python312'") as info:
        images.image_from_text(change(GOOD), "python312")
    assert message in str(info.value)


def test_a_missing_image_is_a_clear_error():
    with pytest.raises(images.ImageError, match="no sandbox image 'nope'"):
        images.load_image("nope")


def test_a_process_renders_the_nsjail_configuration_once_per_set_of_arguments(
    require_nsjail, monkeypatch
):
    """Each Jail gets a file in memory of its own (closed at close), written from a text
    rendered once per process for the same arguments."""
    rendered = []
    render = images.render
    monkeypatch.setattr(images, "render", lambda cfg: rendered.append(cfg) or render(cfg))
    isolation._nsjail_config_text.cache_clear()
    launchers = [isolation.nsjail_launcher(args) for args in ("{'a': 1}", "{'a': 1}", "{'a': 2}")]
    try:
        texts = [Path(f"/proc/self/fd/{launcher.config_fd}").read_text() for launcher in launchers]
        assert [launcher.config_text for launcher in launchers] == texts
        assert len({launcher.config_fd for launcher in launchers}) == 3
        assert texts[0] == texts[1] != texts[2] and "{'a': 2}" in texts[2]
        assert len(rendered) == 2
    finally:
        for launcher in launchers:
            launcher.close()
    assert [launcher.pass_fds for launcher in launchers] == [(), (), ()]


def _unused_id(db) -> int:
    lookup = pwd.getpwuid if db is pwd else grp.getgrgid
    for number in range(54321, 60000):
        try:
            lookup(number)
        except KeyError:
            return number
    raise AssertionError("no free id")


@pytest.mark.parametrize("db", [pwd, grp])
def test_nsjail_gets_ids_by_their_local_names(db):
    """nsjail looks each id up by name first: a number misses the local files and goes on
    to the next name service (systemd's here, ~0.3 ms of every jail's start). A name that
    gives the id back is passed instead; an id without one stays a number."""
    by_id, by_name = (pwd.getpwuid, pwd.getpwnam) if db is pwd else (grp.getgrgid, grp.getgrnam)
    name = by_id(0)[0]  # id 0 has a name on every host
    assert images.id_name(0, db) == name and by_name(name)[2] == 0
    unused = _unused_id(db)
    assert images.id_name(unused, db) == str(unused)
    jailed = images.id_name(65534, db)  # the image's uid and gid: a name where the host has one
    assert jailed == str(65534) or by_name(jailed)[2] == 65534
    img = images.load_image("python312")
    for userns in (False, True):
        cfg = images.nsjail_config(img, ["-c", "pass"], userns)
        idmap = (cfg.uidmap if db is pwd else cfg.gidmap)[0]
        assert idmap.inside_id == jailed
        own = os.geteuid() if db is pwd else os.getegid()
        assert idmap.outside_id == (images.id_name(own, db) if userns else jailed)
