"""Bundled kits cannot be shadowed, the gate never follows a symlink, templates never crash."""

import os

import pytest

from lackjail.errors import KitError
from lackjail.gate import Gate, discover, render
from lackjail.gate.discover import open_program
from lackjail.infer import generate
from lackjail.infer.templates import TemplateError, TemplateStore, fill, parse_template
from lackjail.kit import list_kits, resolve_kit, write_kit
from lackjail.policy import load_policy

SECRET = "API_TOKEN=hunter2-very-secret"


def test_a_workspace_kit_may_not_take_a_bundled_kit_s_name(tmp_path):
    kits = tmp_path / ".lackjail" / "kits"
    kits.mkdir(parents=True)
    (kits / "readonly.kit").write_text("read_file\nwrite_file\n")
    with pytest.raises(KitError) as caught:
        resolve_kit("readonly", workspace=tmp_path)
    message = str(caught.value)
    assert str(kits / "readonly.kit") in message and "lackjail/kit/kits/readonly.kit" in message
    listed = {name: source for name, source, _ in list_kits(tmp_path)}
    assert listed["readonly"] == "bundled"


def test_a_workspace_kit_symlinked_out_of_the_tree_is_not_read(tmp_path):
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    kits = tmp_path / "ws" / ".lackjail" / "kits"
    kits.mkdir(parents=True)
    (kits / "mine.kit").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(KitError) as caught:
        resolve_kit("mine", workspace=tmp_path / "ws")
    assert "symlink" in str(caught.value) and SECRET not in str(caught.value)


@pytest.mark.parametrize("link", [".lackjail/kits", ".lackjail"])
def test_a_workspace_kit_folder_symlinked_out_of_the_tree_is_not_read(tmp_path, link):
    """`.lackjail/kits` (or `.lackjail`) is a symlink to a folder outside the workspace that holds
    `x.kit`; the workspace's config picks kit `x`. The controller (maybe root) read that file
    and quoted its first line in the error. A workspace kit is read beneath the workspace."""
    outside = tmp_path / "outside"
    (outside / "kits").mkdir(parents=True)
    (outside / "kits" / "x.kit").write_text(SECRET + "\n")
    os.chmod(outside / "kits" / "x.kit", 0o600)
    ws = tmp_path / "ws"
    (ws / ".lackjail").mkdir(parents=True)
    target = outside / "kits" if link == ".lackjail/kits" else outside
    if link == ".lackjail":
        (ws / ".lackjail").rmdir()
    (ws / link).symlink_to(target)
    with pytest.raises(KitError) as caught:
        resolve_kit("x", workspace=ws)
    assert "outside the workspace" in str(caught.value) and SECRET not in str(caught.value)
    # listed beneath the workspace: nothing of the folder outside is even named
    assert [path for _, source, path in list_kits(ws) if source == "workspace"] == []
    with pytest.raises(KitError) as caught:
        resolve_kit(str(ws / ".lackjail" / "kits" / "x.kit"), workspace=ws)
    assert SECRET not in str(caught.value)


@pytest.fixture
def repo(tmp_path):
    """A repository whose programs folder holds a symlink to the CI checkout's .env."""
    (tmp_path / ".env").write_text(SECRET + "\n")
    os.chmod(tmp_path / ".env", 0o600)
    root = tmp_path / "repo"
    (root / "progs").mkdir(parents=True)
    (root / "progs" / "ok.lackpy").write_text("1 + 1\n")
    (root / "progs" / "x.lackpy").symlink_to("../../.env")
    (root / "progs" / "shadow.lackpy").symlink_to("/etc/shadow")
    return root


def test_the_gate_reports_symlinks_and_never_reads_them(repo):
    found = discover([str(repo)], root=str(repo))
    assert {f.name: bool(f.finding) for f in found} == {
        "progs/ok.lackpy": False,
        "progs/shadow.lackpy": True,
        "progs/x.lackpy": True,
    }
    kit = resolve_kit("none")
    report = Gate(load_policy("default"), kit, root=str(repo)).run_all(found)
    status = {p.name: p.status for p in report.programs}
    assert status == {
        "progs/ok.lackpy": "valid",
        "progs/shadow.lackpy": "rejected",
        "progs/x.lackpy": "rejected",
    }
    for fmt in ("text", "json", "sarif", "junit"):
        out = render(report, fmt)
        assert SECRET not in out and "hunter2" not in out
        assert "symlink" in out


def test_an_explicit_symlink_argument_is_a_finding_too(repo):
    [found] = discover([str(repo / "progs" / "x.lackpy")], root=str(repo))
    assert found.finding and "not read" in found.finding


def test_a_folder_swapped_for_a_symlink_during_the_walk_is_never_listed(tmp_path, monkeypatch):
    """A user exchanges a subfolder with a symlink to a folder only root may list, at the worst
    moment: after the walk saw a folder there, before it lists it (a looping renameat2 won
    that race in 10 of 68 root gate runs). No name from there may reach the report."""
    repo, secret = tmp_path / "repo", tmp_path / "private"
    (repo / "s").mkdir(parents=True)
    (repo / "s" / "a.lackpy").write_text("1\n")
    secret.mkdir(mode=0o700)
    (secret / "private-name.lackpy").write_text("1\n")
    swapped = []

    def swap_before(real):
        def call(target, *args, **kwargs):
            named = not isinstance(target, int) and os.fsdecode(target).rsplit("/", 1)[-1]
            if not swapped and named == "s":
                swapped.append(target)
                os.rename(repo / "s", repo / "s.old")
                os.symlink(secret, repo / "s")
            return real(target, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "scandir", swap_before(os.scandir))
    monkeypatch.setattr(os, "open", swap_before(os.open))
    names = [f.name for f in discover([str(repo)], root=str(repo))]
    assert swapped and not any("private-name" in n for n in names), names


def test_programs_are_opened_beneath_the_root(repo, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "p.lackpy").write_text(SECRET + "\n")
    (repo / "sub").symlink_to(tmp_path / "elsewhere")  # a folder swapped for a symlink
    with pytest.raises(OSError):
        os.close(open_program(str(repo / "sub" / "p.lackpy"), str(repo)))
    os.close(open_program(str(repo / "progs" / "ok.lackpy"), str(repo)))


@pytest.mark.parametrize(
    "body",
    [
        "x = " + "-" * 3000 + "1",
        "x = " + "[" * 150 + "]" * 150,
        "x = " + " + ".join(["1"] * 5000),
        "x = {a}\n" + "y = " + "not " * 2000 + "True",
    ],
)
def test_deeply_nested_template_bodies_are_a_clear_error(body):
    with pytest.raises(TemplateError):
        fill(body, {"a": "v"})
    with pytest.raises(TemplateError):
        parse_template(f"---\nname: deep\npattern: go {{a}}\n---\n{body}\n")


def test_delegate_survives_a_deep_template_in_the_workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    (tmp_path / ".lackjail").mkdir()
    (tmp_path / ".lackjail" / "config.toml").write_text('[inference]\norder = ["templates"]\n')
    store = TemplateStore.at(tmp_path)
    store.directory.mkdir(parents=True)
    deep = "y = " + "not " * 2000 + "True"  # parses, but the old fill overflowed the stack
    (store.directory / "deep.tmpl").write_text(f"---\nname: deep\npattern: go now\n---\n{deep}\n")
    gen = generate("go now", None, root=tmp_path)
    assert not gen.ok
    assert any("deep" in n["reason"] for n in gen.notes), gen.notes


def test_a_symlinked_template_is_not_read(tmp_path):
    (tmp_path / "secret").write_text(f"---\nname: s\npattern: {SECRET}\n---\n1\n")
    store = TemplateStore.at(tmp_path / "ws")
    store.directory.mkdir(parents=True)
    (store.directory / "s.tmpl").symlink_to(tmp_path / "secret")
    templates, problems = store.load()
    assert templates == [] and len(problems) == 1 and SECRET not in problems[0]


def test_saving_templates_and_kits_never_follows_a_symlinked_folder(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    (ws / ".lackjail").mkdir(parents=True)
    (ws / ".lackjail" / "templates").symlink_to(outside)
    (ws / ".lackjail" / "kits").symlink_to(outside)
    store = TemplateStore.at(ws)
    with pytest.raises(TemplateError):
        store.create("t", "go {x}", "x = {x}\nx")
    assert store.record("t", True) is False
    assert store.load()[0] == []
    with pytest.raises(KitError):
        write_kit(ws, "mine", "read_file\n")
    assert os.listdir(outside) == []


def test_recording_a_template_outcome_stays_in_the_folder(tmp_path):
    store = TemplateStore.at(tmp_path)
    store.create("t", "go {x}", "x = {x}\nx")
    assert store.record("t", True) is True
    [template], problems = store.load()
    assert template.success_count == 1 and problems == []
    leftovers = [n for n in os.listdir(store.directory) if n.endswith(".tmp")]
    assert leftovers == []
