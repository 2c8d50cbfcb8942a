"""ToolSession: the one dispatch path for every tool call of one run.

Everything `call` receives comes out of the jail and is hostile. In order it
checks the name (a host tool of this kit), the tool-call budget, the
arguments (plain data, bounded, bound against the spec), the policy
(allow/deny), and approval; then it runs the tool in a thread under its
timeout, checks the result is plain data, merges the call's staged writes
(verifying them), and records the trace entry itself. It never raises for
anything the program did: every failure is a CallOutcome with an error and,
for a refusal or a spent budget, a verdict that ends the run.

The trace is bounded: one entry shows at most TRACE_ARGS_CHARS of rendered
arguments (then a marker says how many were cut), and once a run's trace has
passed TRACE_MAX_BYTES or TRACE_MAX_ENTRIES, the next call ends the run with
the verdict `limit`: a program calling in a loop cannot grow the controller
or its result without end.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from lackjail.errors import LimitExceeded, RunOutOfTime, ToolCallError, ToolDenied
from lackjail.kit.calls.budget import Budget
from lackjail.kit.plain import ARGS_MAX_SIZE, RESULT_MAX_SIZE, display, plain_copy, summarize
from lackjail.kit.tools.providers import ToolContext
from lackjail.policy import load_policy
from lackjail.workspace.protect import Protection
from lackjail.workspace.transaction import Workspace

MAX_ERROR_CHARS = 2000
TRACE_ARGS_CHARS = 4096  # rendered arguments (and keywords) one trace entry shows
TRACE_MAX_BYTES = 4 << 20  # rendered trace of one run (estimated as its JSON size)
TRACE_MAX_ENTRIES = 50_000  # entries of one run's trace
ENTRY_CHARS = 160  # what an entry's other fields count toward TRACE_MAX_BYTES


@dataclass(frozen=True)
class CallOutcome:
    """What the controller answers a tool call with: plain data or an error, and maybe a verdict."""

    ok: bool
    value: Any = None
    error: str | None = None
    verdict: str | None = None  # "denied" or "limit": the run must end with this status


class ToolSession:
    """Tool calls of one run against one kit, policy and workspace; see the module docstring."""

    def __init__(
        self, kit, policy=None, workspace=None, approve=None, on_event=None, dry_run=False
    ):
        self.kit = kit
        self.policy = load_policy(policy)
        protection = Protection.from_policy(self.policy)
        self._owns_workspace = not isinstance(workspace, Workspace)
        if self._owns_workspace:
            self.workspace = Workspace(workspace, protection=protection)
        else:
            workspace.protect(protection)
            self.workspace = workspace
        self.approve = approve
        self.on_event = on_event
        self.dry_run = dry_run
        self.trace: list[dict] = []
        self._trace_bytes = 0
        self.budget = Budget(self.policy.limits)
        self._host = set(kit.host_tools)
        self._lock = threading.Lock()
        self._runner = None

    @property
    def stats(self) -> dict:
        return self.budget.stats()

    def call(self, name, args, kwargs, deadline: float | None = None) -> CallOutcome:
        """Check and run one call from the program; always returns, never raises for the program's
        doing. DEADLINE (time.monotonic) is the run's: a call still running then is abandoned
        and its outcome has the verdict `timeout`.
        """
        with self._lock:
            started = time.perf_counter()
            entry = {
                "seq": len(self.trace) + 1,
                "tool": name if self._known(name) else display(name, 60),
            }
            try:
                self._check_trace()
                outcome = self._dispatch(name, args, kwargs, entry, deadline)
            except ToolCallError as exc:
                outcome = CallOutcome(False, None, _message(exc), exc.verdict)
            except (
                Exception
            ) as exc:  # a bug of a provider or of lackjail: fail this call, keep the run
                outcome = CallOutcome(
                    False, None, _message(f"internal error in {entry['tool']}: {_describe(exc)}")
                )
            entry.setdefault("args", [])
            entry["ok"] = outcome.ok
            entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
            entry["summary"] = summarize(outcome.value) if outcome.ok else "error"
            if not outcome.ok:
                entry["error"] = outcome.error
            if outcome.verdict:
                entry["verdict"] = outcome.verdict
            self.trace.append(entry)
            self._trace_bytes += _size(entry.get("args")) + _size(entry.get("kwargs"))
            self._trace_bytes += ENTRY_CHARS + len(entry.get("error") or "")
        if self.on_event is not None:
            self.on_event(dict(entry))
        return outcome

    def _check_trace(self) -> None:
        """End the run (verdict `limit`) once its trace has reached its bounds."""
        if self._trace_bytes >= TRACE_MAX_BYTES or len(self.trace) >= TRACE_MAX_ENTRIES:
            raise LimitExceeded(
                f"the trace of this run reached its bound ({len(self.trace)} calls, about "
                f"{self._trace_bytes} bytes; at most {TRACE_MAX_ENTRIES} calls or "
                f"{TRACE_MAX_BYTES} bytes): make fewer tool calls, or smaller ones"
            )

    def _known(self, name) -> bool:
        return type(name) is str and name in self._host

    def _dispatch(self, name, args, kwargs, entry, deadline) -> CallOutcome:
        # Every call counts, unknown names too: a loop of bad calls still ends.
        self.budget.charge_call()
        if not self._known(name):
            if type(name) is str and name in self.kit.jail_tools:
                raise ToolCallError(
                    f"{name} runs inside the jail; it is not answered by the controller"
                )
            known = ", ".join(sorted(self._host)) or "none"
            raise ToolCallError(
                f"no tool named {display(name, 60)} in this kit; host tools: {known}"
            )
        if type(args) not in (list, tuple):
            raise ToolCallError(f"{name}: arguments must be a list, not {type(args).__name__}")
        if kwargs is None:
            kwargs = {}
        if type(kwargs) is not dict:
            raise ToolCallError(
                f"{name}: keyword arguments must be a dict, not {type(kwargs).__name__}"
            )
        args, kwargs = plain_copy([list(args), kwargs], f"{name}() arguments", ARGS_MAX_SIZE)
        entry["args"], kept = _render(args, TRACE_ARGS_CHARS)
        if kwargs:
            entry["kwargs"], _ = _render(kwargs, TRACE_ARGS_CHARS - kept)
        spec = self.kit.specs[name]
        bound = spec.bind(name, args, kwargs)
        self._check_policy(name, spec)
        self._check_approval(name, spec, entry)
        return self._run(name, spec, bound, deadline)

    def _rule_names(self, name, spec) -> set:
        """Names a policy rule may use for this call: the call name, the tool's own name, its
        pack.
        """
        names = {name, spec.name}
        if "." in name:
            names.add(name.partition(".")[0])
        return names

    def _check_policy(self, name, spec) -> None:
        rules, names = self.policy.tools, self._rule_names(name, spec)
        if names & set(rules.deny):
            raise ToolDenied(f"{name} is denied by policy '{self.policy.name}' (tools.deny)")
        if rules.allow and not names & set(rules.allow):
            raise ToolDenied(
                f"{name} is not in the allowed tools of policy '{self.policy.name}' (tools.allow)"
            )

    def _check_approval(self, name, spec, entry) -> None:
        by_policy = bool(self._rule_names(name, spec) & set(self.policy.tools.approval))
        if spec.approval != "required" and not by_policy:
            return
        reason = (
            f"policy '{self.policy.name}' requires approval for it"
            if by_policy
            else "the tool requires approval"
        )
        if self.approve is None:
            raise ToolDenied(f"{name} needs approval ({reason}) and nobody is there to approve it")
        call = {
            "tool": name,
            "args": entry["args"],
            "kwargs": entry.get("kwargs", {}),
            "reason": reason,
        }
        try:
            granted = self.approve(call) is True
        except ToolDenied:  # the approver's own refusal, saying how to approve
            raise
        except Exception as exc:
            raise ToolDenied(
                f"{name} was not approved: the approver failed ({_describe(exc)})"
            ) from None
        if not granted:
            raise ToolDenied(f"{name} was not approved")

    def _timeout(self, name, spec) -> float:
        timeouts = self.policy.tools.timeouts
        for key in (name, spec.name, name.partition(".")[0]):
            if key in timeouts:
                return float(timeouts[key])
        return spec.timeout_s

    def _run(self, name, spec, bound, deadline) -> CallOutcome:
        timeout = self._timeout(name, spec)
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise RunOutOfTime(f"the run's deadline came before {name} could run")
        view = self.workspace.view(self.budget, writable=self.policy.tools.workspace_writable)
        ctx = ToolContext(workspace=view, policy=self.policy, call_name=name)
        fn = self.kit.toolbox.providers[spec.provider].bind(spec, ctx)
        if self._runner is None:
            self._runner = _ToolThread()
        box = self._runner.run(fn, bound, timeout if left is None else min(timeout, left))
        if box is None:  # abandoned: the hung call keeps that thread, which ends with it
            self._runner.stop()
            self._runner = None  # the next call gets a new one
            view.close()
            ctx.cancelled.set()
            if left is not None and left < timeout:
                raise RunOutOfTime(
                    f"the run's deadline came while {name} ran; nothing it wrote was kept"
                )
            raise ToolCallError(f"{name} timed out after {timeout:g} s; nothing it wrote was kept")
        view.close()
        if "error" in box:
            exc = box["error"]
            if isinstance(exc, ToolCallError):
                raise exc
            raise ToolCallError(_describe(exc))  # the program reads it as "NAME: ValueError: ..."
        value = plain_copy(box["value"], f"the result of {name}", RESULT_MAX_SIZE)
        self.workspace.merge(view)
        return CallOutcome(True, value)

    def commit(self) -> list[str]:
        """Apply the run's staged writes (not in dry-run mode); the workspace-relative paths
        written.
        """
        if self.dry_run:
            self.workspace.rollback()
            return []
        return self.workspace.commit()

    def rollback(self) -> None:
        self.workspace.rollback()

    def diff(self) -> str:
        return self.workspace.diff()

    def close(self) -> None:
        """End the session's tool thread (a hung tool's abandoned thread ends with its call)
        and, when the session opened its workspace, drop what is staged and close the root's
        descriptor. Commit first to keep the writes; closing twice is harmless."""
        if self._runner is not None:
            self._runner.stop()
            self._runner = None
        if self._owns_workspace:
            self.workspace.close()

    def __enter__(self) -> ToolSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _ToolThread:
    """One long-lived thread that runs a session's tool calls under a timeout.

    Starting a thread per call costs more than most tools do; handing the call
    to a waiting thread costs a queue put and get.
    """

    def __init__(self):
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="lackjail-tool", daemon=True).start()

    def _loop(self):
        while True:
            item = self._calls.get()
            if item is None:
                return
            fn, bound = item
            box: dict = {}
            try:
                box["value"] = fn(**bound)
            except (
                BaseException
            ) as exc:  # the tool's failure, reported to the program by the caller
                box["error"] = exc
            self._results.put(box)

    def stop(self):
        self._calls.put(None)

    def run(self, fn, bound, timeout):
        """The call's {"value"} or {"error"}; None when it did not finish within TIMEOUT."""
        self._calls.put((fn, bound))
        try:
            return self._results.get(timeout=timeout)
        except queue.Empty:
            return None


def _render(values, budget: int) -> tuple:
    """VALUES (a list of arguments, or a dict of keywords) rendered for the trace, within
    BUDGET characters: once it is spent, a marker says how many were cut. Also the size used."""
    keyed = type(values) is dict
    items: list[tuple[str, Any]] = list(values.items()) if keyed else [("", v) for v in values]
    shown: list = []  # (key, rendering)
    used = 0
    for index, (key, value) in enumerate(items):
        if keyed and not (key.isidentifier() and len(key) <= 40):
            key = display(key, 40)
        rendering = display(value, quote=False)
        size = _size(rendering) + len(key) + (4 if keyed else 2)
        if used + size > budget:
            cut = f"…(+{len(items) - index} more cut: a trace entry shows {TRACE_ARGS_CHARS} chars)"
            shown.append(("…", cut))
            break
        used += size
        shown.append((key, rendering))
    return (dict(shown) if keyed else [r for _, r in shown]), used


def _size(shown) -> int:
    """About the JSON size of a rendered value (`display` bounds its depth and width)."""
    kind = type(shown)
    if kind is str:
        return len(shown) + 2
    if kind is list:
        return 2 + sum(_size(v) + 2 for v in shown)
    if kind is dict:
        return 2 + sum(len(k) + 4 + _size(v) for k, v in shown.items())
    return 8


def _describe(exc: BaseException) -> str:
    """`Type: message` of an exception whose __str__ may itself fail."""
    try:
        text = str(exc)
    except Exception:
        text = "<unprintable message>"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _message(exc) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "…"
