"""`lackjail batch`: many programs from a JSONL file, one result line per input id, resumable.

Input: one JSON object a line, `{"id", "program", "params"?, "kit"?, "policy"?,
"language"?}`; blank lines are ignored. A program wrapped in a Markdown code fence runs as
the code inside (its errors keep the line numbers of the line's program). Output: the run's
`--json` object plus `id`, one line per program, appended and flushed as each finishes.

- Resumable: ids already in the output are skipped. The output is read first;
  a last line cut short by a crash is cut off (that id runs again).
- Every input line gets exactly one result: a line that cannot be run (not
  UTF-8, not JSON, no program, unknown kit or policy, a duplicate id) gets a
  result with status `invalid` and a message naming the line. A line without a
  usable id (or a duplicate, or an id of the reserved form `line:N`) is
  reported under the derived id `line:N`, N its 1-based line number.
- Lines are grouped by (kit, policy, language); each group runs on one runner (a local
  Jail, or a Ray cluster) before the next. Nothing is written before the first
  runner has started: a batch that cannot start leaves the output as it was.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from lackjail.errors import InputError
from lackjail.infer.sanitize import place_back, unfence
from lackjail.jsondata import jsonable
from lackjail.lang import LANGUAGES
from lackjail.workspace.hostfs import HostFile, explain
from lackjail.workspace.paths import show

DERIVED_ID = re.compile(r"line:\d+")
LINE_KEYS = ("id", "program", "params", "kit", "policy", "language")
STATUS_ORDER = ("ok", "invalid", "error", "timeout", "memory", "limit", "killed", "denied")


class BatchInputError(InputError, ValueError):
    """The input or output file cannot be used at all (exit 2)."""


@dataclass
class Job:
    """One input line that can run: its id, program, params and group."""

    line: int
    id: object
    program: str
    params: dict
    kit: str | None
    policy: str
    language: str | None = None
    above: int = 0  # lines of the line's program before the code of its Markdown fence


@dataclass
class Summary:
    """What a batch did: counts by status (all ids in the output), this run's speed."""

    counts: Counter = field(default_factory=Counter)
    ran: int = 0
    skipped: int = 0
    seconds: float = 0.0
    latencies_ms: list = field(default_factory=list)
    interrupted: bool = False

    @property
    def runs_per_s(self) -> float:
        return self.ran / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return 0.0
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def failed(self) -> bool:
        return any(status != "ok" for status in self.counts)

    def text(self) -> str:
        counts = ", ".join(
            f"{status} {self.counts[status]}"
            for status in sorted(self.counts, key=_status_rank)
            if self.counts[status]
        )
        head = "interrupted" if self.interrupted else "done"
        return (
            f"{head}: {self.ran} run, {self.skipped} already in the output; {counts or 'nothing'}; "
            f"{self.runs_per_s:,.0f} runs/s; p50 {self.percentile(0.5):.1f} ms, "
            f"p99 {self.percentile(0.99):.1f} ms"
        )


def _status_rank(status: str) -> int:
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)


def _key(ident) -> str:
    """Ids compare as their JSON text: 1 and "1" are different ids."""
    return json.dumps(ident)


# -- the output file --------------------------------------------------------


def read_done(output: HostFile) -> dict:
    """Id key -> status of every result line in the OUTPUT file; cut off a torn last line.

    Each line is written by one write(), so only the last one can be cut short
    (a crash mid-write): it is removed and its id runs again. Any other line
    that is not a result means the file is not ours to append to.
    """
    path = output.path
    try:
        data = output.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise BatchInputError(f"cannot read {path}: {explain(exc)}") from None
    complete = data.rfind(b"\n") + 1  # bytes up to the end of the last whole line
    done = {}
    for number, line in enumerate(data[:complete].split(b"\n")[:-1], 1):
        parsed = _result_line(line)
        if parsed is None:
            raise BatchInputError(
                f"{path}:{number}: not a result line (a JSON object with an id); "
                "remove the line or write the results to a new file"
            )
        done[_key(parsed["id"])] = parsed.get("status")
    if complete < len(data):
        try:
            output.truncate(complete)
        except OSError as exc:
            raise BatchInputError(f"cannot write {path}: {explain(exc)}") from None
    return done


def _result_line(line: bytes):
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) and "id" in obj else None


class ResultWriter:
    """Append result lines to an OUTPUT file; each is one write() of a whole line, flushed as it
    comes.

    The file is opened (and created) by the first line, so a batch that writes
    nothing leaves the output as it was; never through a symlink, never a FIFO
    or a device.
    """

    def __init__(self, output: HostFile):
        self.output = output
        self._fd: int | None = None

    def write(self, ident, result: dict) -> None:
        if self._fd is None:
            self._fd = self._open()
        fd = self._fd
        line = json.dumps({"id": ident, **jsonable(result)}, ensure_ascii=True) + "\n"
        data = line.encode()
        while data:
            data = data[os.write(fd, data) :]

    def _open(self) -> int:
        try:
            return self.output.open_append()
        except OSError as exc:
            raise BatchInputError(f"cannot write {self.output.path}: {explain(exc)}") from None

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


# -- the input file ---------------------------------------------------------


def invalid_result(message: str) -> dict:
    from lackjail.result import Result

    return Result.failed("invalid", message).to_dict()


def parse_line(
    raw: bytes,
    number: int,
    kit: str | None,
    policy: str,
    name: str = "<input>",
    pinned: frozenset = frozenset(),
    language: str | None = None,
):
    """A Job, or (id, message) for a line that cannot run. The id may be derived (`line:N`).

    PINNED holds "kit", "policy" and/or "language" where the operator chose one for every
    line: a line naming another cannot run (whoever writes the lines cannot loosen their own
    sandbox; a line's language is a choice among the policy's levels in any case). Messages
    start `NAME:LINE:` (and `COL:` where one is known), 1-based.
    """
    derived = f"line:{number}"
    at = f"{name}:{number}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            derived,
            f"{at}:{exc.start + 1}: not UTF-8 (byte {raw[exc.start]:#04x})",
        )
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return derived, f"{at}:{exc.colno}: not JSON: {exc.msg}"
    except RecursionError:
        return derived, f"{at}: not JSON this program reads: nested too deeply"
    except ValueError:  # an integer past int's digit limit (int_max_str_digits)
        return derived, (
            f"{at}: not JSON this program reads: an integer has more than "
            f"{sys.get_int_max_str_digits()} digits"
        )
    if not isinstance(obj, dict):
        return derived, f"{at}: a JSON object is needed, not {type(obj).__name__}"
    ident = obj.get("id")
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        why = "no id" if ident is None else "the id must be a string or an integer"
        return derived, f"{at}: {why}"
    if isinstance(ident, str) and DERIVED_ID.fullmatch(ident):
        return (
            derived,
            f"{at}: ids of the form 'line:N' are reserved for lines without a usable id",
        )
    unknown = set(obj) - set(LINE_KEYS)
    if unknown:
        return ident, f"{at}: unknown keys {sorted(unknown)} (use {', '.join(LINE_KEYS)})"
    program = obj.get("program")
    if not isinstance(program, str):
        why = "no program" if program is None else "'program' must be a string"
        return ident, f"{at}: {why}"
    params = {} if obj.get("params") is None else obj["params"]
    if not isinstance(params, dict):
        return ident, f"{at}: 'params' must be an object"
    for key, suffix in (("kit", ".kit"), ("policy", ".toml")):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            return ident, f"{at}: '{key}' must be a string"
        if value and ("/" in value or os.sep in value or value.endswith(suffix)):
            # the input chooses among named kits and policies; files only by --kit/--policy
            return ident, f"{at}: '{key}' must be a name, not a path (pass a file with --{key})"
    level = obj.get("language")
    if level is not None and level not in LANGUAGES:
        return ident, f"{at}: 'language' must be one of {', '.join(LANGUAGES)}, not {show(level)}"
    for key, chosen in (("kit", kit), ("policy", policy), ("language", language)):
        if key in pinned and obj.get(key) and obj[key] != chosen:
            return ident, (
                f"{at}: the line asks for {key} {obj[key]!r}, but this batch runs every line "
                f"with --{key} {chosen!r} (drop the line's '{key}', or leave --{key} out to "
                "let the lines choose)"
            )
    program, above = unfence(program)
    return Job(
        number,
        ident,
        program,
        params,
        obj.get("kit") or kit,
        obj.get("policy") or policy,
        level or language,
        above,
    )


def _lines(fh: BinaryIO) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, bytes) of every non-blank line of the input FH."""
    fh.seek(0)
    offset = 0
    for number, raw in enumerate(fh, 1):
        if raw.strip():
            yield number, offset, raw.rstrip(b"\r\n")
        offset += len(raw)


def _read_at(fh: BinaryIO, lines: list) -> Iterator[tuple[int, bytes]]:
    """(number, bytes) of the lines of the input FH at the given (offset, number)s."""
    for offset, number in lines:
        fh.seek(offset)
        yield number, fh.readline().rstrip(b"\r\n")


def _open_files(input_path: str, output_path: str) -> tuple[BinaryIO, HostFile]:
    """The input, opened (a regular file, never through a symlink), and the output's folder,
    opened once: every later read, append or cut of the output happens beneath it."""
    try:
        with HostFile(input_path) as source:
            fh = os.fdopen(source.open(), "rb")
    except OSError as exc:
        raise BatchInputError(f"cannot read {input_path}: {explain(exc)}") from None
    try:
        return fh, HostFile(output_path)
    except OSError as exc:
        fh.close()
        raise BatchInputError(f"cannot write {output_path}: {explain(exc)}") from None


# -- running ------------------------------------------------------------------


# (kit, policy, language) -> a context manager with as_completed
Runner = Callable[[str | None, str, str | None], object]


def run_batch(
    input_path: str,
    output_path: str,
    open_runner: Runner,
    *,
    kit: str | None = None,
    policy: str = "default",
    pinned: frozenset = frozenset(),
    progress=None,
    language: str | None = None,
) -> Summary:
    """Run every input line not yet in the output; return the Summary.

    OPEN_RUNNER(kit, policy, language) gives a context manager with `as_completed(jobs)`
    (jobs are `(key, program, params)`) yielding `(key, Result)`, or raises
    InputError (the group's kit or policy: its lines become `invalid`) or HostError.
    PINNED: see parse_line. PROGRESS(total) gives a callable advanced once per result.
    On KeyboardInterrupt the summary says so; every result received is written.

    Nothing is written until a runner has started (or none is needed): the
    results of lines that cannot run wait until then, so a batch that stops
    because no runner starts (HostError: the host cannot isolate, the
    cluster is unreachable) leaves the output as it was, and its rerun runs
    every line once.
    """
    source, output = _open_files(input_path, output_path)
    try:
        return _run(
            source, input_path, output, open_runner, (kit, policy, language), pinned, progress
        )
    finally:
        source.close()
        output.close()


def _run(source, input_path, output, open_runner, given, pinned, progress) -> Summary:
    """The batch's passes; GIVEN: the command's (kit, policy, language)."""
    kit, policy, language = given
    done = read_done(output)
    writer = ResultWriter(output)
    summary = Summary()
    started = time.perf_counter()
    try:
        groups, invalid = _plan(source, input_path, done, given, pinned, summary)
        advance = (
            progress(len(invalid) + sum(len(v) for v in groups.values())) if progress else None
        )

        held: list | None = []  # results waiting for the first runner; None once it started

        def release() -> None:  # a runner is up (or none is needed): write what waited
            nonlocal held
            waiting, held = held or [], None
            for ident, result in waiting:
                record(ident, result)

        def record(ident, result: dict) -> None:
            if held is not None:
                held.append((ident, result))
                return
            writer.write(ident, result)
            summary.counts[result["status"]] += 1
            summary.ran += 1
            wall = result.get("stats", {}).get("wall_ms")
            if result["status"] != "invalid" and isinstance(wall, (int, float)):
                summary.latencies_ms.append(wall)
            if advance:
                advance()

        for ident, message in invalid:
            record(ident, invalid_result(message))
        for group, lines in groups.items():
            _run_group(source, input_path, lines, group, language, open_runner, record, release)
        release()
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        summary.seconds = time.perf_counter() - started
        writer.close()
    return summary


def _plan(source, input_path, done, given, pinned, summary):
    """One pass over the input: the malformed lines' results, and each group's line offsets.
    GIVEN: the command's (kit, policy, language)."""
    kit, policy, language = given
    groups: dict[tuple, list] = {}
    invalid: list = []
    seen: dict[str, int] = {}
    for number, offset, raw in _lines(source):
        parsed = parse_line(raw, number, kit, policy, input_path, pinned, language)
        ident = parsed.id if isinstance(parsed, Job) else parsed[0]
        first = seen.get(_key(ident))
        if first is not None:
            ident, parsed = (
                f"line:{number}",
                (
                    None,
                    f"{input_path}:{number}: duplicate id {_key(ident)} (first on line {first})",
                ),
            )
        seen.setdefault(_key(ident), number)
        if _key(ident) in done:
            summary.skipped += 1
            summary.counts[done[_key(ident)]] += 1
        elif isinstance(parsed, Job):
            groups.setdefault(_group(parsed), []).append((offset, number))
        else:
            invalid.append((ident, parsed[1]))
    return groups, invalid


def _group(job: Job) -> tuple:
    return job.kit, job.policy, job.language


def _run_group(source, input_path, lines, group, language, open_runner, record, release) -> None:
    """Run one (kit, policy, language) GROUP; LINES are the (offset, number) of its lines,
    LANGUAGE the batch's own (--language).

    RELEASE is called once its runner is up, before the first job is handed over.
    """
    kit, policy, level = group
    above: dict = {}  # id -> lines before its fenced code: its errors are placed back

    def jobs():
        for number, raw in _read_at(source, lines):
            job = parse_line(raw, number, kit, policy, input_path, language=language)
            if not isinstance(job, Job) or _group(job) != group:
                raise BatchInputError(f"{input_path}:{number}: the line changed during the batch")
            above[_key(job.id)] = job.above
            yield job.id, job.program, job.params

    try:
        runner = open_runner(*group)
    except InputError as exc:
        where = f"kit {kit!r}, policy {policy!r}" + (f", language {level!r}" if level else "")
        for ident, _, _ in jobs():
            record(ident, invalid_result(f"{where}: {exc}"))
        return
    with runner:
        release()
        for ident, result in runner.as_completed(jobs()):
            result = result.to_dict() if hasattr(result, "to_dict") else result
            record(ident, place_back(result, above.pop(_key(ident), 0)))


def open_local(workspace=None, workers=None, concurrency=None, isolation=None, processes=None):
    """A Runner on this machine: one Jail per (kit, policy, language); PROCESSES: its
    controller processes ("auto", a number, None: the policy's)."""

    def open_runner(kit, policy, language=None):
        jail = open_jail(policy, kit, workspace, workers, isolation, language, processes)
        return _LocalRunner(jail, concurrency)

    return open_runner


def open_jail(policy, kit, workspace, workers, isolation, language=None, processes=None):
    """The Jail a batch's programs of one (kit, policy, language) run in, here or on a node."""
    from lackjail.api import Jail

    return Jail(
        policy=policy,
        kit=kit,
        workers=workers,
        workspace=workspace,
        isolation=isolation,
        language=language,
        processes=processes,
    )


class _LocalRunner:
    def __init__(self, jail, concurrency):
        self.jail, self.concurrency = jail, concurrency

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.jail.close()

    def as_completed(self, jobs):
        return self.jail.as_completed(jobs, concurrency=self.concurrency)
