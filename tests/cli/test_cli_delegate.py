"""`lackjail delegate` and `lackjail template`, run as a user would, down to the real jail."""

import json

import pytest
from click.testing import CliRunner
from infer_support import ollama_text, write_config

from lackjail.cli.delegate import delegate, template
from lackjail.infer import TemplateStore

pytestmark = pytest.mark.usefixtures("clean_env")


def invoke(command, *args):
    return CliRunner().invoke(command, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "b.py").write_text("b = 2\n")
    (tmp_path / "notes.txt").write_text("hello notes\n")
    return tmp_path


# --- template -----------------------------------------------------------------------------------


def create_read_template(project):
    """`lackjail template create` of the template `read` ("read the file {path}", kit
    readonly) that returns the file's content; the click result."""
    (project / "read.lackpy").write_text("content = read_file({path})\ncontent\n")
    return invoke(
        template,
        "create",
        "read.lackpy",
        "--name",
        "read",
        "--pattern",
        "read the file {path}",
        "--kit",
        "readonly",
    )


def test_template_create_and_list(project):
    done = create_read_template(project)
    assert done.exit_code == 0, done.output
    assert "saved template read" in done.stdout
    listed = invoke(template, "list")
    assert listed.stdout == "read\tread the file {path}\tok=0 failed=0\n"
    assert (
        json.loads(invoke(template, "list", "--json").stdout)[0]["pattern"]
        == "read the file {path}"
    )


def test_template_create_rejects_an_invalid_program(project):
    (project / "bad.lackpy").write_text("import os\nread_file({path})\n")
    done = invoke(
        template,
        "create",
        "bad.lackpy",
        "--name",
        "bad",
        "--pattern",
        "read {path}",
        "--kit",
        "readonly",
    )
    assert done.exit_code == 2
    assert done.stderr.startswith("bad.lackpy:1:1: ")
    assert not (project / ".lackjail" / "templates" / "bad.tmpl").exists()


def test_template_create_needs_the_kit_for_tool_calls(project):
    (project / "read.lackpy").write_text("read_file({path})\n")
    done = invoke(template, "create", "read.lackpy", "--name", "r", "--pattern", "read {path}")
    assert done.exit_code == 2 and "read_file" in done.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--name", "x", "--pattern", "read {a}{b}"], "need words between them"),
        (["--name", "../x", "--pattern", "read {path}"], "use letters, digits"),
        # the body reads {path}, which this pattern does not give: an undefined name
        (["--name", "x", "--pattern", "read {other}"], "name 'path' is not defined"),
        (["--kit", "no-such-kit", "--name", "x", "--pattern", "read {path}"], "no-such-kit"),
    ],
)
def test_template_create_bad_input_is_one_line(project, args, message):
    (project / "read.lackpy").write_text("read_file({path})\n")
    done = invoke(
        template,
        "create",
        "read.lackpy",
        *args,
        *([] if "--kit" in args else ["--kit", "readonly"]),
    )
    assert done.exit_code == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_template_create_refuses_overwrite(project):
    (project / "read.lackpy").write_text("read_file({path})\n")
    args = ["read.lackpy", "--name", "r", "--pattern", "read {path}", "--kit", "readonly"]
    assert invoke(template, "create", *args).exit_code == 0
    again = invoke(template, "create", *args)
    assert again.exit_code == 2 and "--force" in again.stderr
    assert invoke(template, "create", *args, "--force").exit_code == 0


# --- delegate without running -------------------------------------------------------------------


def test_delegate_no_run_prints_the_program(project):
    write_config(project, '[inference]\norder = ["templates", "rules"]\n')
    done = invoke(delegate, "find all python files and count them", "--kit", "readonly", "--no-run")
    assert done.exit_code == 0
    assert done.stdout == "len(find_files('**/*.py'))\n"
    assert "# tier: rules" in done.stderr


def test_delegate_no_run_json(project):
    write_config(project, '[inference]\norder = ["rules"]\n')
    done = invoke(delegate, "read the file notes.txt", "--kit", "readonly", "--no-run", "--json")
    out = json.loads(done.stdout)
    assert done.exit_code == 0
    assert (out["status"], out["tier"], out["program"], out["result"]) == (
        "generated",
        "rules",
        "read_file('notes.txt')",
        None,
    )
    assert set(out) >= {"attempts", "notes", "timings", "intent"}


def test_delegate_without_a_program_exits_2(project):
    write_config(project, '[inference]\norder = ["templates", "rules"]\n')
    done = invoke(delegate, "write a poem", "--kit", "readonly", "--no-run")
    assert done.exit_code == 2
    assert "no valid program" in done.stderr and "rules: no rule matches" in done.stderr
    # no model was asked: say which settings and variables would bring one in
    for key in ("OLLAMA_HOST", "ANTHROPIC_API_KEY", "[inference] order", "providers.ollama"):
        assert key in done.stderr


@pytest.mark.parametrize(
    "config, intent, message",
    [
        ('[inference]\norder = ["rules", "gpt4"]\n', "list python files", "unknown tier 'gpt4'"),
        ("", "   ", "the intent is empty"),
    ],
)
def test_delegate_bad_input_is_one_line(project, config, intent, message):
    write_config(project, config)
    done = invoke(delegate, intent, "--kit", "readonly", "--no-run")
    assert done.exit_code == 2
    assert message in done.stderr and "Traceback" not in done.stderr


# --- delegate --run: loopback model server and the real jail ------------------------------------


@pytest.fixture
def jail_ready(require_nsjail):
    pass


def test_delegate_run_end_to_end(project, llm, jail_ready):
    write_config(
        project,
        f'[inference]\norder = ["templates", "rules", "ollama"]\n'
        f'[inference.providers.ollama]\nhost = "{llm.url}"\nmodel = "test-coder"\n',
    )
    llm.reply("ollama", ollama_text("import os\nlen(os.listdir('.'))"))
    llm.reply(
        "ollama",
        ollama_text("```python\nfiles = find_files('**/*.py')\nprint(files)\nlen(files)\n```"),
    )
    done = invoke(
        delegate, "tell me how many python sources this project has", "--kit", "readonly", "--json"
    )
    out = json.loads(done.stdout)
    assert done.exit_code == 0, done.output
    assert (out["status"], out["tier"], out["source"]) == ("ok", "ollama", "test-coder")
    assert [bool(a["errors"]) for a in out["attempts"]] == [True, False]
    assert [n["tier"] for n in out["notes"]] == ["templates", "rules"]
    result = out["result"]
    assert (result["status"], result["value"], result["isolation"]) == ("ok", 2, "nsjail")
    assert sorted(json.loads(result["output"].replace("'", '"'))) == ["a.py", "pkg/b.py"]
    assert [t["tool"] for t in result["trace"]] == ["find_files"]
    assert set(out["timings"]["tiers"]) == {"templates", "rules", "ollama"}
    assert out["timings"]["run_ms"] > 0 and out["timings"]["total_ms"] > 0


def test_delegate_run_template_counts_and_injection(project, jail_ready):
    assert create_read_template(project).exit_code == 0
    write_config(project, '[inference]\norder = ["templates"]\n')
    ok = invoke(delegate, "read the file notes.txt", "--kit", "readonly", "--json")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["result"]["value"] == "hello notes\n"
    hostile = invoke(
        delegate,
        "read the file x') if False else read_file('notes.txt",
        "--kit",
        "readonly",
        "--json",
    )
    out = json.loads(hostile.stdout)
    assert hostile.exit_code == 1 and out["result"]["status"] == "error"
    [call] = out["result"]["trace"]
    assert call["tool"] == "read_file" and call["ok"] is False
    assert "if False else" in call["args"][0]  # the whole capture was one path, nothing else ran
    [saved], _ = TemplateStore.at(project).load()
    assert (saved.success_count, saved.fail_count) == (1, 1)


def test_delegate_run_human_output(project, jail_ready):
    write_config(project, '[inference]\norder = ["rules"]\n')
    done = invoke(delegate, "find all python files and count them", "--kit", "readonly")
    assert done.exit_code == 0, done.output
    assert done.stdout == "2\n"
    assert "# tier: rules (find-and-count-files-of-kind)" in done.stderr
