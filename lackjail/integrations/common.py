"""What the framework adapters share: one lackjail session per adapter, running a model's
code in it, the text a model reads back from a run, and the error of a missing extra.

A model's code tool is called again and again in one conversation: the
variables, functions and classes one call binds are there for the next, as in
a notebook. The session behind it opens on the first call; one that ended (its
idle timeout, its jail lost) is replaced by a fresh one, and the model is told.
"""

from __future__ import annotations

import threading

from lackjail.lang import format_error
from lackjail.sessions import Session

FILENAME = "program"  # how a model's code is named in `file:line:col: message`
WHAT_HAPPENED = {
    "invalid": "was rejected before it ran",
    "error": "failed",
    "timeout": "ran out of time",
    "memory": "ran out of memory",
    "limit": "hit a limit",
    "killed": "was stopped",
    "denied": "was denied a tool call",
}


class CodeSession:
    """Runs a model's programs in one session of JAIL (a `lackjail.Jail` the caller owns),
    each under TIMEOUT seconds (None: the policy's); a context manager that closes the session.
    Thread-safe: calls are served one at a time, in order."""

    def __init__(self, jail, *, timeout: float | None = None, idle_timeout_s: float | None = None):
        self.jail = jail
        self.timeout = timeout
        self.idle_timeout_s = idle_timeout_s
        self._session: Session | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> CodeSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, code: str, params=None) -> tuple:
        """Run CODE (PARAMS become variables of the session): (the `Result`, a note for the
        model: why the state is gone when this run had to open a new session, else '')."""
        with self._lock:
            note = ""
            if self._session is not None and self._session.closed:
                note = f"The earlier session ended ({self._session.ended}); this run started clean."
                self._session = None
            if self._session is None:
                self._session = self.jail.session(idle_timeout_s=self.idle_timeout_s)
            return self._session.run(code, params, timeout=self.timeout), note

    def close(self) -> None:
        """Close the session (its state is gone); the next run opens a new one."""
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None


def missing_extra(adapter: str, package: str, extra: str, exc: ImportError) -> ImportError:
    """The error ADAPTER (a module's `__name__`) raises when importing its framework failed
    with EXC: it names PACKAGE and the lackjail EXTRA that installs it."""
    return ImportError(
        f"{adapter} needs {package} ({exc}); install it: pip install 'lackjail[{extra}]'"
    )


def answer(session: CodeSession, code: str, failed: type[Exception]) -> str:
    """Run CODE in SESSION: the text the model reads back, raised as FAILED(text) (how the
    framework tells a model its program went wrong) when the program did not run to the end."""
    result, note = session.run(code)
    text = observation(result, note)
    if result.status != "ok":
        raise failed(text)
    return text


def code_function(session: CodeSession, failed: type[Exception], summary: str):
    """`run_code(code: str) -> str`, the function a framework makes its code tool of: it runs
    the code in SESSION (see `answer`); its docstring, which the framework reads for the tool's
    schema, is SUMMARY and its one argument."""

    def run_code(code: str) -> str:
        return answer(session, code, failed)

    run_code.__doc__ = f"{summary}\n\nArgs:\n    code: the program, as plain source text."
    return run_code


def observation(result, note: str = "") -> str:
    """What a model reads back from RESULT: what the program printed and, when it ran to the
    end, its last expression's value; else what went wrong, as `program:line:col: message`
    lines it can act on. NOTE (from CodeSession.run) comes first."""
    parts = [note] if note else []
    if result.output:
        parts.append("Printed:\n" + result.output.rstrip("\n"))
    if result.status != "ok":
        parts.append(problem(result))
    elif result.value is not None or not result.output:
        parts.append(f"Value: {result.value!r}")
    return "\n".join(parts)


def problem(result) -> str:
    """What went wrong in RESULT (not `ok`), one `program:line:col: message` line per error."""
    said = WHAT_HAPPENED.get(result.status, f"ended {result.status}")
    lines = [format_error(error, FILENAME) for error in result.errors]
    return f"The program {said}:\n" + "\n".join(lines or [result.status])


def tool_description(jail) -> str:
    """What a framework's code tool says of itself: what it runs, that state stays, and the
    tools a program may call with their signatures (`lackjail.prompt(kit=jail.kit)` has the
    language's rules, for the system prompt)."""
    kit = jail.kit
    tools = (
        "Tools it may call: "
        + "; ".join(spec.signature(call) for call, spec in kit.specs.items())
        + "."
        if kit is not None and kit.specs
        else "It has no tools: it computes with its variables and literals."
    )
    return (
        "Run a program in a sandbox and get back what it printed and the value of its last "
        f"expression. The program is Python at the language level {jail.checker.language!r}; "
        "the variables, functions and classes it binds stay for the next call. " + tools
    )


def session_of(jail_or_session) -> CodeSession:
    """A CodeSession: the one given, or a new one of the Jail given (closed with the Jail)."""
    if isinstance(jail_or_session, CodeSession):
        return jail_or_session
    return CodeSession(jail_or_session)
