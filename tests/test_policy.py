"""Policies: bundled ones load; bad keys and values name the key and the fix."""

import pytest

from lackjail.policy import PolicyError, load_policy


@pytest.mark.parametrize(
    "name, isolation", [("default", "landlock"), ("strict", "nsjail"), ("ci", "nsjail")]
)
def test_bundled_policies_load(name, isolation):
    """The default accepts the landlock level where namespaces cannot be made; strict and
    ci demand nsjail."""
    policy = load_policy(name)
    assert policy.name == name
    assert policy.isolation == isolation
    assert policy.limits.memory_mb > 0


def test_ci_workspace_is_read_only():
    assert load_policy("ci").tools.workspace_writable is False


@pytest.mark.parametrize(
    "data,message",
    [
        ({"limits": {"wal_s": 1}}, "unknown policy key 'limits.wal_s'; known keys in [limits]"),
        ({"limit": {}}, "unknown policy key 'limit'"),
        ({"limits": {"memory_mb": "lots"}}, "'limits.memory_mb' must be a whole number"),
        ({"limits": {"memory_mb": -1}}, "'limits.memory_mb' must be >= 0"),
        ({"limits": {"memory_mb": 0}}, "'limits.memory_mb' must be > 0"),
        ({"limits": {"wall_s": 0}}, "'limits.wall_s' must be a positive number"),
        ({"pool": {"mode": "fast"}}, "'pool.mode' must be one of fresh, reuse"),
        ({"pool": {"spares": 0}}, "'pool.spares' must be between 1 and 16"),
        ({"pool": {"spares": 100000}}, "'pool.spares' must be between 1 and 16"),
        ({"pool": {"workers": 100000}}, "'pool.workers' must be at most 1024 (0: one per CPU)"),
        ({"pool": {"recycle_after": 0}}, "'pool.recycle_after' must be >= 1"),
        ({"isolation": "docker"}, "'isolation' must be one of nsjail, landlock, seccomp, any"),
        ({"tools": {"approval": "write_file"}}, "'tools.approval' must be a list of tool names"),
        (
            {"tools": {"timeouts": {"x": -1}}},
            "'tools.timeouts' must map tool names to positive seconds",
        ),
        ({"tools": {"workspace_writable": 1}}, "'tools.workspace_writable' must be true or false"),
    ],
)
def test_bad_policy_names_the_key(data, message):
    with pytest.raises(PolicyError) as info:
        load_policy(data)
    assert message in str(info.value)


def test_unknown_policy_name_lists_bundled(tmp_path):
    with pytest.raises(PolicyError, match="bundled policies: ci, default, strict"):
        load_policy("nosuch")


def test_policy_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('isolation = "any"\n[limits]\ncpu_s = 2\n')
    policy = load_policy(str(path))
    assert (policy.name, policy.isolation, policy.limits.cpu_s) == ("mine", "any", 2)
    path.write_text("[limits\n")
    with pytest.raises(PolicyError, match="not valid TOML"):
        load_policy(str(path))
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy(str(tmp_path / "missing.toml"))


@pytest.mark.parametrize("workers", [-1, 100000])
def test_a_pool_size_out_of_bounds_is_refused_before_any_jail_starts(workers):
    from lackjail.pool import Pool

    with pytest.raises(ValueError, match=r"workers must be between 1 and 1024 .*not -?\d+"):
        Pool(load_policy("default"), workers=workers)


def test_a_policy_lists_the_levels_it_allows(tmp_path):
    from lackjail.lang import LANGUAGES

    assert load_policy("default").languages == LANGUAGES  # left out: every level there is
    assert load_policy("ci").languages == LANGUAGES
    assert load_policy("strict").languages == ("lackpy", "extended")
    path = tmp_path / "p.toml"
    path.write_text('languages = ["extended", "lackpy"]\nlanguage = "extended"\n')
    policy = load_policy(str(path))
    assert (policy.language, policy.languages) == ("extended", ("extended", "lackpy"))
    assert policy.check_language("lackpy") == "lackpy"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"languages": "lackpy"}, "policy key 'languages' must list the language levels"),
        ({"languages": []}, "policy key 'languages' must list the language levels"),
        ({"languages": ["lackpy", "cobol"]}, "among lackpy, extended"),
        (
            {"languages": ["lackpy"], "language": "extended"},
            "policy key 'language' ('extended', the level used when none is chosen) must be one "
            "of its 'languages': lackpy",
        ),
    ],
)
def test_bad_languages_name_the_key(data, message):
    with pytest.raises(PolicyError) as caught:
        load_policy(data)
    assert message in str(caught.value)


def test_a_level_outside_the_list_is_refused_naming_the_allowed_ones():
    with pytest.raises(PolicyError) as caught:
        load_policy({"languages": ["lackpy"]}).check_language("extended", "--language")
    assert str(caught.value) == (
        "language level 'extended' (--language) is not allowed by policy 'custom'; "
        "it allows: lackpy"
    )
