"""The model prompt describes the language level programs are checked at."""

import pytest

from lackjail.infer import pipeline, prompt


@pytest.mark.parametrize(
    "level, marker", [("lackpy", "A tool error ends the run"), ("extended", "def/return")]
)
def test_the_model_prompt_describes_the_level_in_force(monkeypatch, tmp_path, level, marker):
    seen, real = [], prompt.system_prompt

    def capture(language, kit, params):
        seen.append(real(language, kit, params))
        raise RuntimeError("stop before any request")

    monkeypatch.setattr(prompt, "system_prompt", capture)
    config = {
        "order": ["local"],
        "providers": {"local": {"kind": "ollama", "host": "http://127.0.0.1:9", "model": "m"}},
    }
    with pytest.raises(RuntimeError, match="stop before any request"):
        pipeline.generate("count the files", None, (), config=config, root=tmp_path, language=level)
    assert seen and f"Language spec:\n{level} (spec version" in seen[0] and marker in seen[0]
