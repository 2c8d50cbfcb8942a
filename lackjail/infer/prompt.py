"""The messages a model sees: the language, the kit, the parameters, the intent, the validator's
errors.

Built from the language spec and the kit's own description, so a prompt can
never promise a construct the validator rejects or a tool the kit lacks.
`prompt()` is the public part (`lackjail.prompt`): what any agent framework
puts in its system prompt; `system_prompt()` adds what delegate's one-shot
replies need.
"""

from __future__ import annotations

HOW = """How a program works:
- Its only way to touch files or the world is to call the tools it is given.
- Only the constructs and builtins of the language spec below are allowed; anything else \
is rejected, with the line, the column and what to write instead.
- The value of the last expression statement is the program's result: \
end with the expression that answers the request.
- print() output is captured and shown to the caller."""

REPLY = """You write programs in a subset of Python that runs in a sandbox, at the language level \
{level!r} (its spec is below).
Reply with the program only: no explanation, no Markdown, no code fences."""


def prompt(
    kit=None, language: str | None = None, *, params=(), policy="default", workspace=None
) -> str:
    """The text a model needs to write programs for a jail: how a program works, the LANGUAGE
    level's spec (the POLICY's level when None), KIT's tools with their signatures, and the
    names of PARAMS.

    KIT is a resolved kit (`jail.kit`), a kit name or tool list (resolved beneath WORKSPACE),
    or None to leave the tools out (a framework that lists its own tools). Raises ValueError
    for an unknown level, KitError for a bad kit.
    """
    from lackjail import lang
    from lackjail.policy import load_policy

    level = lang.check_language(language or load_policy(policy).language)
    if isinstance(kit, str):
        from lackjail.kit import resolve_kit

        kit = resolve_kit(kit, workspace=workspace)
    spec_text = lang.render(lang.spec(level)).strip()
    parts = [HOW, "Language spec:\n" + spec_text]
    if kit is not None:
        parts.append(_tools(kit))
    if params:
        parts.append(
            "Parameters (names already defined when the program starts; "
            "read them, do not assign them): " + ", ".join(params)
        )
    return "\n\n".join(parts) + "\n"


def _tools(kit) -> str:
    if not kit.names:
        return "Tools: none. The program can only compute with its parameters and literals."
    return "Tools (call them like functions):\n" + kit.describe().strip()


def system_prompt(language: str, kit=None, params=()) -> str:
    """The system message of delegate's model tiers: reply with a bare program, then prompt()
    (which says so when there are no tools)."""
    if kit is None:
        from lackjail.kit import resolve_kit

        kit = resolve_kit(None)
    return REPLY.format(level=language) + "\n\n" + prompt(kit, language, params=params)


def request(intent: str) -> str:
    """The first user message; the intent is quoted as data for the model, never run."""
    return f"Write a lackpy program for this request:\n\n{intent}"


def feedback(errors: list) -> str:
    """The user message that returns a rejected program's validation errors (dicts) to the model."""
    lines = []
    for err in errors:
        where = ""
        if err.get("line") is not None:
            where = (
                f"line {err['line']}"
                + (f", column {err['col']}" if err.get("col") is not None else "")
                + ": "
            )
        lines.append(f"- {where}{err['message']}")
    return (
        "The validator rejected that program:\n"
        + "\n".join(lines)
        + "\nReply with the corrected complete program only."
    )
