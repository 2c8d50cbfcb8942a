"""ToolSession: the one dispatch path for every tool call of one run.

Everything `call` receives comes out of the jail and is hostile. In order it
checks the name (a host tool of this kit), the tool-call budget, the
arguments (plain data, bounded, bound against the spec), the policy
(allow/deny), and approval; then it runs the tool under its timeout (`call`:
on the session's tool thread; `inline`: on the calling thread, which a watcher
may take the call from at its timeout: a run's relay, pool/relay.py), checks
the result is plain data, merges the call's staged writes (verifying them),
and records the trace entry itself. What the policy says of a tool is worked
out at its first call; every check still runs on every call. It never raises for
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
from lackjail.kit.plain import (
    ARGS_MAX_SIZE,
    RESULT_MAX_SIZE,
    display,
    plain_call,
    plain_copy,
    summarize,
)
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
        self._plans: dict[str, _Plan] = {}  # host tool name -> what the policy says of it

    @property
    def stats(self) -> dict:
        return self.budget.stats()

    def call(self, name, args, kwargs, deadline: float | None = None) -> CallOutcome:
        """Check and run one call from the program; always returns, never raises for the program's
        doing. DEADLINE (time.monotonic) is the run's: a call still running then is abandoned
        and its outcome has the verdict `timeout`. The tool runs on the session's tool thread.
        """
        outcome = self._call(name, args, kwargs, deadline, None)
        assert outcome is not None  # without a watch no one can take the call from this thread
        return outcome

    __call__ = call  # a run's tool handler

    def inline(self, name, args, kwargs, deadline, watch) -> CallOutcome | None:
        """`call`, with the tool run on this thread: WATCH.arm(until, abandon) before it runs,
        WATCH.disarm() after. A watcher that took the call past `until` gets its outcome (the
        timeout, in the trace) from abandon(), and answers it: this then returns None, and the
        thread must leave the run alone (the relay threads of pool/relay.py)."""
        return self._call(name, args, kwargs, deadline, watch)

    def _call(self, name, args, kwargs, deadline, watch) -> CallOutcome | None:
        started = time.perf_counter()
        tool = name if self._known(name) else display(name, 60)
        entry = {"seq": 0, "tool": tool}
        try:
            with self._lock:
                entry["seq"] = len(self.trace) + 1
                self._check_trace()
                job = self._dispatch(name, args, kwargs, entry, deadline)
            if watch is None:
                outcome = self._run(job)
            else:
                watch.arm(time.monotonic() + job.wait_s, lambda: self._abandon(job, started))
                box = _box(job.fn, job.bound)
                if not watch.disarm():
                    return None
                outcome = self._finish(job, box)
        except Exception as exc:
            outcome = _failed(exc, tool)
        self._record(entry, outcome, started)
        return outcome

    def _abandon(self, job, started) -> CallOutcome:
        """The outcome of JOB taken from the thread that runs it past its time, recorded."""
        outcome = _failed(self._timed_out(job), job.entry["tool"])
        self._record(job.entry, outcome, started)
        return outcome

    def _record(self, entry, outcome, started) -> None:
        with self._lock:
            entry.setdefault("args", [])
            entry["ok"] = outcome.ok
            entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
            entry["summary"] = summarize(outcome.value) if outcome.ok else "error"
            if not outcome.ok:
                entry["error"] = outcome.error
            if outcome.verdict:
                entry["verdict"] = outcome.verdict
            self._trace_bytes += entry.pop("size", 0) + ENTRY_CHARS + len(entry.get("error") or "")
            self.trace.append(entry)
        if self.on_event is not None:
            self.on_event(dict(entry))

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

    def _dispatch(self, name, args, kwargs, entry, deadline) -> _Job:
        """The checks, in order; the call ready to run, or ToolCallError."""
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
        args, kwargs = plain_call(args, kwargs, f"{name}() arguments", ARGS_MAX_SIZE)
        entry["args"], kept = _render(args, TRACE_ARGS_CHARS)
        if kwargs:
            entry["kwargs"], used = _render(kwargs, TRACE_ARGS_CHARS - kept)
            kept += used
        entry["size"] = kept
        plan = self._plans.get(name) or self._plan(name)
        bound = plan.spec.bind(name, args, kwargs)
        if plan.denied:
            raise ToolDenied(plan.denied)
        if plan.approval:
            self._check_approval(name, plan.approval, entry)
        return self._job(name, plan, bound, deadline, entry)

    def _plan(self, name) -> _Plan:
        """What the policy says of NAME, worked out at its first call in the session."""
        spec = self.kit.specs[name]
        names = self._rule_names(name, spec)
        rules = self.policy.tools
        denied = approval = ""
        if names & set(rules.deny):
            denied = f"{name} is denied by policy '{self.policy.name}' (tools.deny)"
        elif rules.allow and not names & set(rules.allow):
            denied = (
                f"{name} is not in the allowed tools of policy '{self.policy.name}' (tools.allow)"
            )
        if names & set(rules.approval):
            approval = f"policy '{self.policy.name}' requires approval for it"
        elif spec.approval == "required":
            approval = "the tool requires approval"
        provider = self.kit.toolbox.providers[spec.provider]
        # a provider whose tools take no context binds each once, not per call
        fn = None if getattr(provider, "uses_context", True) else provider.bind(spec, None)
        timeout = self._timeout(name, spec)
        plan = self._plans[name] = _Plan(spec, provider, fn, timeout, denied, approval)
        return plan

    def _rule_names(self, name, spec) -> set:
        """Names a policy rule may use for this call: the call name, the tool's own name, its
        pack.
        """
        names = {name, spec.name}
        if "." in name:
            names.add(name.partition(".")[0])
        return names

    def _check_approval(self, name, reason, entry) -> None:
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

    def _job(self, name, plan, bound, deadline, entry) -> _Job:
        timeout = plan.timeout
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise RunOutOfTime(f"the run's deadline came before {name} could run")
        wait_s = timeout if left is None else min(timeout, left)
        job = _Job(name, plan.fn, bound, timeout, wait_s, wait_s < timeout, entry)
        if job.fn is None:  # a provider that gives its tools the call's context
            job.view = self.workspace.view(
                self.budget, writable=self.policy.tools.workspace_writable
            )
            job.ctx = ToolContext(workspace=job.view, policy=self.policy, call_name=name)
            job.fn = plan.provider.bind(plan.spec, job.ctx)
        return job

    def _run(self, job) -> CallOutcome:
        """JOB on the session's tool thread, under its timeout."""
        if self._runner is None:
            self._runner = _ToolThread()
        box = self._runner.run(job.fn, job.bound, job.wait_s)
        if box is None:  # abandoned: the hung call keeps that thread, which ends with it
            self._runner.stop()
            self._runner = None  # the next call gets a new one
            raise self._timed_out(job)
        return self._finish(job, box)

    def _timed_out(self, job) -> ToolCallError:
        """What a call abandoned past its time ends with; nothing it writes from now on counts."""
        if job.ctx is not None:
            job.view.close()
            job.ctx.cancelled.set()
        if job.by_deadline:
            return RunOutOfTime(
                f"the run's deadline came while {job.name} ran; nothing it wrote was kept"
            )
        return ToolCallError(
            f"{job.name} timed out after {job.timeout:g} s; nothing it wrote was kept"
        )

    def _finish(self, job, box) -> CallOutcome:
        """The outcome of JOB, which returned or raised BOX in time."""
        if job.view is not None:
            job.view.close()
        if "error" in box:
            exc = box["error"]
            if isinstance(exc, ToolCallError):
                raise exc
            raise ToolCallError(_describe(exc))  # the program reads it as "NAME: ValueError: ..."
        value = plain_copy(box["value"], f"the result of {job.name}", RESULT_MAX_SIZE)
        if job.view is not None:
            self.workspace.merge(job.view)
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


@dataclass(frozen=True)
class _Plan:
    """A host tool as the session's policy has it: the same for each of its calls."""

    spec: Any
    provider: Any
    fn: Any  # the bound tool, when its provider gives it no context (else bound per call)
    timeout: float
    denied: str  # why the policy refuses it ("": it does not)
    approval: str  # why it needs approval ("": it does not)


class _Job:
    """A call that passed its checks, ready to run."""

    __slots__ = ("name", "fn", "bound", "timeout", "wait_s", "by_deadline", "entry", "view", "ctx")

    def __init__(self, name, fn, bound, timeout, wait_s, by_deadline, entry):
        self.name, self.fn, self.bound, self.entry = name, fn, bound, entry
        self.timeout = timeout  # the tool's
        self.wait_s = wait_s  # what it may take: its timeout, or less: the run's deadline
        self.by_deadline = by_deadline  # wait_s is the run's deadline's
        self.view = self.ctx = None  # the call's WorkspaceView and ToolContext, if it takes one


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
            self._results.put(_box(*item))

    def stop(self):
        self._calls.put(None)

    def run(self, fn, bound, timeout):
        """The call's {"value"} or {"error"}; None when it did not finish within TIMEOUT."""
        self._calls.put((fn, bound))
        try:
            return self._results.get(timeout=timeout)
        except queue.Empty:
            return None


def _box(fn, bound) -> dict:
    """{"value": FN(**BOUND)}, or {"error": what it raised}: the tool's failure, which the
    program is told of."""
    try:
        return {"value": fn(**bound)}
    except BaseException as exc:
        return {"error": exc}


def _failed(exc: Exception, tool: str) -> CallOutcome:
    """The outcome of a call that failed with EXC: a refusal or the tool's error as the
    program reads it, or a bug of a provider or of lackjail (which fails the call, not the
    run)."""
    if isinstance(exc, ToolCallError):
        return CallOutcome(False, None, _message(exc), exc.verdict)
    return CallOutcome(False, None, _message(f"internal error in {tool}: {_describe(exc)}"))


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
