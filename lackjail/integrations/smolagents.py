"""smolagents: `LackjailExecutor`, a CodeAgent executor that runs each step's code in a jail.

    from lackjail.integrations.smolagents import LackjailExecutor

    with LackjailExecutor(kit="readonly", language="python") as executor:
        agent = CodeAgent(tools=[...], model=model, executor=executor,
                          instructions=executor.instructions())
        agent.run("How many Python files are there?")

The agent's tools (sent with `send_tools`) become tools of the executor's jail:
the code calls them as functions, and each call crosses to this process, where
the smolagents Tool runs. Its variables (`send_variables`) become variables of
the session; what one step binds is there for the next. `final_answer(x)` ends
the step with that answer; printed output is the step's logs; a program that is
rejected or fails raises InterpreterError, which the agent shows to the model.
"""

from __future__ import annotations

import inspect

from lackjail.integrations.common import CodeSession, missing_extra, problem

try:
    from smolagents.local_python_executor import CodeOutput, InterpreterError, PythonExecutor
except ImportError as exc:  # the optional extra
    raise missing_extra(__name__, "smolagents", "smolagents", exc) from None


# smolagents' input types -> the types a jail tool declares
TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}


class LackjailExecutor(PythonExecutor):
    """Runs a CodeAgent's steps in one lackjail session, in a Jail of its own made from KIT,
    POLICY, LANGUAGE and WORKSPACE (and JAIL_OPTIONS, other `lackjail.Jail` keywords) plus the
    agent's tools. TIMEOUT bounds each step (None: the policy's wall limit)."""

    def __init__(
        self,
        *,
        kit=None,
        policy="default",
        language: str | None = None,
        workspace=None,
        timeout: float | None = None,
        **jail_options,
    ):
        self.options = dict(
            kit=kit, policy=policy, language=language, workspace=workspace, **jail_options
        )
        # the steps run in a session (a jail of its own): the pool for plain runs stays smallest
        self.options.setdefault("workers", 1)
        self.timeout = timeout
        self.state: dict = {}  # "_print_outputs": the last step's logs, as CodeAgent reads them
        self._tools: dict = {}
        self._variables: dict = {}  # sent, not yet given to a run
        self._jail = None
        self._code: CodeSession | None = None
        self._answer = _NO_ANSWER  # what the step's final_answer() gave (on a tool's thread)

    # -- PythonExecutor --------------------------------------------------------------

    def send_tools(self, tools: dict) -> None:
        """The agent's tools (name -> smolagents Tool) become the jail's. Tools of the same
        names and inputs replace the ones the jail calls; others reopen the jail (and the
        session: what the steps bound is gone)."""
        tools = dict(tools)
        same = _shape(tools) == _shape(self._tools)
        self._tools = tools
        if not same:
            self.cleanup()

    def send_variables(self, variables: dict) -> None:
        """VARIABLES become variables of the session at the next step."""
        self._variables.update(variables)

    def __call__(self, code_action: str) -> CodeOutput:
        code = self._session()
        self._answer = _NO_ANSWER
        result, note = code.run(code_action, self._variables or None)
        self._variables = {}
        logs = "\n".join(part for part in (note, result.output) if part)
        self.state["_print_outputs"] = logs
        if self._answer is not _NO_ANSWER:
            return CodeOutput(output=self._answer, logs=logs, is_final_answer=True)
        if result.status == "ok":
            return CodeOutput(output=result.value, logs=logs, is_final_answer=False)
        raise InterpreterError(problem(result))

    # -- the jail ---------------------------------------------------------------

    def instructions(self) -> str:
        """What the model needs to know about the language (and the kit's tools: the agent's
        own are listed by smolagents): pass it as CodeAgent(instructions=...)."""
        import lackjail

        return lackjail.prompt(
            self.options["kit"],
            self.options["language"],
            policy=self.options["policy"],
            workspace=self.options["workspace"],
        )

    def _session(self) -> CodeSession:
        if self._code is None:
            from lackjail import Jail

            tools = {name: self._calling(name) for name in self._tools}
            tools["final_answer"] = self._final_answer
            self._jail = Jail(tools=tools, **self.options)
            self._code = CodeSession(self._jail, timeout=self.timeout)
        return self._code

    def _calling(self, name: str):
        """A function with the signature and docstring of the agent's tool NAME, calling the
        one the agent sent last."""
        return _as_function(name, self._tools[name], lambda: self._tools[name])

    def _final_answer(self, answer):
        """Provides a final answer to the given problem: the step ends with it."""
        self._answer = answer

    def cleanup(self) -> None:
        """Close the session and the jail (what the steps bound is gone); CodeAgent calls it."""
        code, jail, self._code, self._jail = self._code, self._jail, None, None
        if code is not None:
            code.close()
        if jail is not None:
            jail.close()

    def __enter__(self) -> LackjailExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()


_NO_ANSWER = object()


def _shape(tools: dict) -> list:
    """What the jail's specs are made from: each tool's name, inputs and output type."""
    return sorted(
        (name, repr(getattr(tool, "inputs", None)), repr(getattr(tool, "output_type", None)))
        for name, tool in tools.items()
    )


def _as_function(name: str, tool, current):
    """A plain function with the signature and docstring of smolagents Tool TOOL (whose own
    `__call__(*args, **kwargs)` says nothing of its arguments), calling the tool CURRENT()
    gives and returning plain data."""
    params = []
    for arg, schema in tool.inputs.items():
        kind = TYPES.get(schema.get("type"), "Any")
        nullable = schema.get("nullable", False)
        params.append(
            inspect.Parameter(
                arg,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=None if nullable else inspect.Parameter.empty,
                annotation=f"{kind} | None" if nullable and kind != "Any" else kind,
            )
        )

    def call(**arguments):
        return _plain(current()(**arguments))

    call.__name__ = call.__qualname__ = name
    call.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    lines = [" ".join(str(tool.description).split()) or name]
    if tool.inputs:
        lines += ["", "Parameters:"] + [
            f"    {arg} ({TYPES.get(s.get('type'), 'Any')}): "
            + " ".join(str(s.get("description", "")).split())
            for arg, s in tool.inputs.items()
        ]
    call.__doc__ = "\n".join(lines)
    return call


def _plain(value):
    """VALUE with smolagents' str subclasses (AgentText) as plain str, in lists and dicts too."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
