"""docs/rules.md, made from the rule tables: what each rule a report names asks, with a
rejected and an accepted example. SARIF's helpUri points at its anchors (`#rule-ID`).

Regenerate with `python -m lackjail.gate.rules_page > docs/rules.md` (a test checks
that the file is up to date).
"""

from __future__ import annotations

from lackjail.gate.sarif import OTHER, VERDICTS
from lackjail.lang.custom_rules import SHIPPED
from lackjail.lang.rulebook import RULEBOOK


def _plain(text: str) -> str:
    """TEXT with what a page cannot show (a lone surrogate, a control) as its escape."""
    return "".join(
        c
        if c == "\n" or (c.isprintable() and not "\ud800" <= c <= "\udfff")
        else c.encode("unicode_escape", "backslashreplace").decode()
        for c in text
    )


def _code(text: str) -> str:
    text = _plain(text)
    if "\n" in text:
        return "\n```\n" + text + "\n```\n"
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def _entry(rule_id: str, asks: str) -> list[str]:
    return [
        f'<a id="rule-{rule_id}"></a>',
        "",
        f"### `{rule_id}`",
        "",
        asks[0].upper() + asks[1:] + ".",
        "",
    ]


def render() -> str:
    lines = [
        "# lackjail rules",
        "",
        "Every rule id a report (text, JSON, JUnit, SARIF, GitHub annotations) can name.",
        "Made from the rule tables by `python -m lackjail.gate.rules_page`; do not edit.",
        "",
        "## Validator rules",
        "",
    ]
    for rule_id, (asks, rejected, accepted, level) in RULEBOOK.items():
        lines += _entry(rule_id, asks)
        if level == "described":
            lines += [f"- rejected: {_plain(rejected)}", f"- accepted: {_plain(accepted)}", ""]
        else:
            where = {"param": "as a `--param` value"}.get(level, f"at the `{level}` level")
            lines += [
                f"- rejected ({where}): {_code(rejected)}",
                f"- accepted: {_code(accepted)}",
                "",
            ]
    lines += ["## Custom rules shipped with lackjail", ""]
    for rule_id, asks in SHIPPED.items():
        lines += _entry(rule_id, asks)
    lines += ["## Run verdicts (`lackjail gate --run`)", ""]
    for rule_id, what in VERDICTS.items():
        lines += _entry(rule_id, f"a finding when {what}")
    lines += ["## The gate's own", ""]
    for rule_id, asks in OTHER.items():
        lines += _entry(rule_id, asks)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(render(), end="")
