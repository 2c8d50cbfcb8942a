"""`infer.delegate` as the library calls it: a real Jail, parameters, run and no-run."""

import pytest
from infer_support import ollama_text, write_config

from lackjail.api import Jail
from lackjail.infer import IntentError, delegate


@pytest.fixture
def jail(require_nsjail, tmp_path):
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.txt").write_text("")
    with Jail(kit="readonly", workers=1, workspace=tmp_path) as jail:
        yield jail


def test_parameters_reach_validation_and_the_run(jail, llm, tmp_path):
    write_config(
        tmp_path,
        f'[inference]\norder = ["ollama"]\n[inference.providers.ollama]\nhost = "{llm.url}"\n',
    )
    llm.reply("ollama", ollama_text("len(find_files(pattern))"))
    outcome = delegate(jail, "count the files matching my pattern", {"pattern": "*.txt"})
    assert (outcome.status, outcome.exit_code, outcome.result.value) == ("ok", 0, 1)
    assert "pattern" in llm.sent("ollama")[0]["messages"][0]["content"]
    data = outcome.to_dict()
    assert (
        data["program"] == "len(find_files(pattern))"
        and data["result"]["trace"][0]["tool"] == "find_files"
    )


def test_no_run_and_nothing_generated(jail, tmp_path):
    write_config(tmp_path, '[inference]\norder = ["rules"]\n')
    outcome = delegate(jail, "list python files", run=False)
    assert (outcome.status, outcome.exit_code, outcome.result) == ("generated", 0, None)
    assert outcome.generation.program == "find_files('**/*.py')"
    nothing = delegate(jail, "compose a sonnet")
    assert (nothing.status, nothing.exit_code, nothing.result) == ("no_program", 2, None)


def test_bad_intents_raise_before_anything_runs(jail):
    for intent in ("", "x" * 9000, None):
        with pytest.raises(IntentError):
            delegate(jail, intent)
