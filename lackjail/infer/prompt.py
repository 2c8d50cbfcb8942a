"""The messages a model sees: the language, the kit, the parameters, the intent, the validator's
errors.

Built from the language spec and the kit's own description, so a prompt can
never promise a construct the validator rejects or a tool the kit lacks.
"""

from __future__ import annotations

INTRO = """You write programs in lackpy, a small subset of Python that runs in a sandbox.
Reply with the program only: no explanation, no Markdown, no code fences.

How a lackpy program works:
- Its only way to touch files or the world is to call the tools listed below; there are no imports.
- Only the constructs and builtins of the language spec below are allowed; anything else \
is rejected.
- The value of the last expression statement is the program's result: \
end with the expression that answers the request.
- print() output is captured and shown to the caller."""


def system_prompt(spec_text: str, kit=None, params=()) -> str:
    """The system message: INTRO, the language spec (as text), the kit's tools and the parameter
    names.
    """
    parts = [INTRO, "Language spec:\n" + spec_text.strip()]
    if kit is not None and kit.names:
        parts.append("Tools (call them like functions):\n" + kit.describe().strip())
    else:
        parts.append("Tools: none. The program can only compute with its parameters and literals.")
    if params:
        parts.append(
            "Parameters (names already defined when the program starts; "
            "read them, do not assign them): " + ", ".join(params)
        )
    return "\n\n".join(parts) + "\n"


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
