"""Programs over a Ray cluster: one actor per node, each holding that node's own jail pool.

    with RayJail(policy="default", kit="readonly", address="auto") as cluster:
        for key, result in cluster.as_completed(jobs):   # jobs: (key, program, params)
            ...

Ray is an optional extra (`pip install 'lackjail[ray]'`); nothing else in
lackjail imports this module. Each actor is pinned to its node (node-affinity,
not soft) and runs a local `Jail` sized to the node's CPUs, under the same
policy and isolation as a local run: a node that cannot isolate as the policy
demands refuses (its actor fails to start with the pool's reason) and gets no
work. Programs go to the actors in chunks, a bounded number in flight per
actor (back-pressure); results come back in completion order.

Failure semantics: when an actor or its node dies, the programs it held have
no result. They are run once more on another actor when the kit is read-only
(no tool above grade 1: it cannot have written anything); otherwise each is
reported `killed`, since it may have written before it died and is never run
twice silently. Every job yields exactly one result.

Only msgpack bytes travel between the driver and the actors; Ray moves the
actor class itself its own way. A cluster is one trust domain: the driver and
the actors are all the trusted controller side.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from collections import deque
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

import msgpack
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from lackjail.batch import open_jail
from lackjail.errors import HostError
from lackjail.result import Result

PROBE_S = 5.0  # how long the cluster's port may take to accept a connection
RAY_CLIENT_PORT = 10001  # Ray Client's default port, for ray://HOST
CHUNK = 32  # programs per actor call: amortizes Ray's per-call cost
CHUNKS_IN_FLIGHT = 3  # per actor: while one chunk's results travel, the others keep the pool busy
LOST = (
    ray.exceptions.RayActorError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.ObjectLostError,
)


class RayJailError(HostError, RuntimeError):
    """The cluster cannot run the programs: not reachable, or no node could start a jail pool."""


def connect(address: str | None = "auto") -> None:
    """Join the Ray cluster at ADDRESS (`auto`, `HOST:PORT`, `ray://HOST:PORT`) unless joined.

    `ray.init` waits minutes for a cluster that is not there, saying only
    "Failed to get cluster ID". So the address Ray would dial is found first by
    Ray's own rules, and its port is tried with a short TCP connect: a cluster
    that is down, or running in another network namespace, is a RayJailError
    naming the address and what to do, within seconds.
    """
    if ray.is_initialized():
        return
    dialed = _dialed(address)
    if dialed is not None:
        _probe(address, *dialed)
    try:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayJailError(f"cannot reach the Ray cluster at {address!r}: {exc}") from None


def _dialed(address: str | None) -> tuple[str, int] | None:
    """The (host, port) `ray.init(ADDRESS)` connects to first; None when it starts a cluster.

    As `ray.init` does: RAY_ADDRESS stands in for `auto`; `ray://HOST:PORT` is a
    Ray Client server; anything else goes through Ray's own resolver, which
    reads the cluster recorded by the last `ray start` under Ray's temp dir (or
    finds a running one) for `auto`, and turns a loopback host into this
    node's address.
    """
    from ray._private.services import canonicalize_bootstrap_address

    target = address
    if address in (None, "auto") and os.environ.get("RAY_ADDRESS"):
        target = os.environ["RAY_ADDRESS"]
    try:
        if target and "://" in target:
            url = urlsplit(target)
            if url.scheme != "ray":
                return None  # another protocol: Ray resolves it its own way
            if not url.hostname:
                raise ValueError(f"{target!r} names no host")
            return url.hostname, url.port or RAY_CLIENT_PORT
        hostport = canonicalize_bootstrap_address(target or "auto")
        if hostport is None:
            return None
        host, _, port = hostport.rpartition(":")
        return host.strip("[]"), int(port)
    except (ConnectionError, ValueError) as exc:  # no cluster found, or a malformed address
        raise RayJailError(_unreachable(address, str(exc))) from None


def _probe(address, host: str, port: int) -> None:
    """A TCP connect to the cluster's port, given PROBE_S: RayJailError when nothing answers."""
    try:
        socket.create_connection((host, port), timeout=PROBE_S).close()
    except ConnectionRefusedError:
        why = f"nothing listens at {host}:{port} (connection refused)"
    except TimeoutError:
        why = f"{host}:{port} did not answer within {PROBE_S:g} s"
    except OSError as exc:
        why = f"{host}:{port}: {exc.strerror or exc}"
    else:
        return
    raise RayJailError(_unreachable(address, why))


def _unreachable(address, why: str) -> str:
    if address in (None, "auto"):
        env = os.environ.get("RAY_ADDRESS")
        where = (
            f"RAY_ADDRESS={env!r}"
            if env
            else "the cluster last started here with `ray start`, or one running here"
        )
        return (
            f"cannot reach the Ray cluster at 'auto' ({where}): {why}. Start the cluster "
            "(`ray start --head`) or pass its head's address with --ray HOST:PORT; a cluster "
            "started in another network namespace cannot be reached from this one"
        )
    return (
        f"cannot reach the Ray cluster at {address!r}: {why}. Is the cluster running "
        "(`ray start --head --port=PORT` on the head) and is the address its head's?"
    )


class NodeJail:
    """The actor: one node's jail pool. It answers chunks of msgpack'd (seq, program, params)."""

    def __init__(self, policy, kit, workspace, workers, isolation, concurrency, language=None):
        try:
            self.jail = open_jail(policy, kit, workspace, workers, isolation, language)
        except Exception as exc:  # the node refuses; the driver reports this message
            raise RuntimeError(f"node {ray.util.get_node_ip_address()} refuses: {exc}") from None
        self.concurrency = concurrency

    def ready(self) -> dict:
        return {
            "isolation": self.jail.isolation,
            "workers": self.jail.workers,
            "pid": os.getpid(),
        }

    def run(self, packed: bytes) -> bytes:
        jobs = msgpack.unpackb(packed, raw=False)
        done = [
            (seq, result.to_dict())
            for seq, result in self.jail.as_completed(
                ((seq, program, params) for seq, program, params in jobs),
                concurrency=self.concurrency,
            )
        ]
        return msgpack.packb(done, use_bin_type=True)


class RayJail:
    """The Ray twin of `Jail.as_completed`/`Jail.map`: one actor per node, each a Jail pool."""

    def __init__(
        self,
        policy="default",
        kit=None,
        workspace=None,
        *,
        address: str | None = "auto",
        isolation: str | None = None,
        concurrency: int | None = None,
        chunk: int = CHUNK,
        chunks_in_flight: int = CHUNKS_IN_FLIGHT,
        runtime_env: dict | None = None,
        language: str | None = None,
    ):
        self.workspace = os.path.abspath(workspace or os.getcwd())
        self.chunk, self.chunks_in_flight = chunk, chunks_in_flight
        self.retry_lost = _read_only(kit, self.workspace)
        connect(address)
        self.actors: dict = {}  # actor handle -> {"node": id, "pid": int, "isolation": str}
        self.refused: dict = {}  # node id -> reason
        self.retried = 0  # programs run again after their actor died
        self._start(policy, kit, isolation, concurrency, runtime_env, language)

    def _start(self, policy, kit, isolation, concurrency, runtime_env, language) -> None:
        remote = ray.remote(num_cpus=0, max_concurrency=self.chunks_in_flight)(NodeJail)  # type: ignore[call-overload]
        starting = {}
        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            workers = max(1, int(node.get("Resources", {}).get("CPU", 1)))
            options = {
                "scheduling_strategy": NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            }
            if runtime_env:
                options["runtime_env"] = runtime_env
            actor = remote.options(**options).remote(
                policy, kit, self.workspace, workers, isolation, concurrency, language
            )
            starting[actor] = (node["NodeID"], actor.ready.remote())
        for actor, (node, ready) in starting.items():
            try:
                self.actors[actor] = {"node": node, **ray.get(ready)}
            except ray.exceptions.RayError as exc:
                self.refused[node] = _reason(exc)
        if not self.actors:
            reasons = "; ".join(self.refused.values()) or "the cluster has no live node"
            raise RayJailError(f"no node could start a jail pool: {reasons}")

    def __enter__(self) -> RayJail:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for actor in list(self.actors):
            ray.kill(actor)
        self.actors.clear()

    def as_completed(self, jobs: Iterable) -> Iterator[tuple[object, Result]]:
        """Run `(key, program, params)` jobs on the actors; yield `(key, Result)` as they finish."""
        source = iter(jobs)
        keys: dict[int, object] = {}  # seq -> key, for jobs sent and not yet answered
        programs: dict[int, tuple] = {}  # seq -> (program, params), kept while it may be retried
        retry: deque = deque()  # seqs whose actor died, to run once more
        retried: set = set()
        in_flight: dict = {}  # object ref -> (actor, [seq, ...])
        load = dict.fromkeys(self.actors, 0)
        seqs = iter(range(1 << 62))
        exhausted = False
        while True:
            for actor in sorted(load, key=lambda a: load[a]):
                while load.get(actor, self.chunks_in_flight) < self.chunks_in_flight:
                    chunk = [retry.popleft() for _ in range(min(len(retry), self.chunk))]
                    while not exhausted and len(chunk) < self.chunk:
                        try:
                            key, program, params = next(source)
                        except StopIteration:
                            exhausted = True
                            break
                        seq = next(seqs)
                        keys[seq], programs[seq] = key, (program, params)
                        chunk.append(seq)
                    if not chunk:
                        break
                    packed = msgpack.packb([(s, *programs[s]) for s in chunk], use_bin_type=True)
                    in_flight[actor.run.remote(packed)] = (actor, chunk)
                    load[actor] += 1
            if not in_flight:
                break
            [ref], _ = ray.wait(list(in_flight), num_returns=1)
            actor, chunk = in_flight.pop(ref)
            try:
                answers = msgpack.unpackb(ray.get(ref), raw=False, strict_map_key=False)
            except LOST as exc:
                self._lost(actor, exc, load)
                for seq in chunk:
                    if self.retry_lost and seq not in retried and load:
                        retried.add(seq)
                        retry.append(seq)
                        self.retried += 1
                    else:
                        programs.pop(seq)
                        yield keys.pop(seq), Result.killed(self._why_killed(seq in retried, exc))
                continue
            if actor in load:
                load[actor] -= 1
            for seq, result in answers:
                programs.pop(seq, None)
                yield keys.pop(seq), Result(**result)
        # every actor is gone: what is left was never run
        for seq in list(retry) + [seq for seq in keys if seq not in retry]:
            yield keys.pop(seq), Result.killed("not run: every actor of the cluster died")
        if not exhausted:
            for key, _, _ in source:
                yield key, Result.killed("not run: every actor of the cluster died")

    def _lost(self, actor, exc, load) -> None:
        load.pop(actor, None)
        self.actors.pop(actor, None)

    def _why_killed(self, was_retried: bool, exc) -> str:
        if was_retried:
            return f"its actor died twice (the second time: {_reason(exc)}); not run again"
        if not self.retry_lost:
            return (
                f"the actor running it died before its result arrived ({_reason(exc)}); "
                "its kit may write, so it was not run again"
            )
        return f"the actor running it died and no other actor was left ({_reason(exc)})"

    def map(self, programs: Iterable, params=None) -> Iterator[Result]:
        """Results in input order, like `Jail.map` (items: texts or (program, params) pairs)."""
        from lackjail.api import program_and_params

        waiting, head = {}, 0
        jobs = ((i, *program_and_params(item, params)) for i, item in enumerate(programs))
        for index, result in self.as_completed(jobs):
            waiting[index] = result
            while head in waiting:
                yield waiting.pop(head)
                head += 1


def _read_only(kit, workspace) -> bool:
    """Can a program of this kit have changed anything? Read-only: no tool above grade 1."""
    if kit is None:
        return True
    from lackjail.kit import resolve_kit

    grade = resolve_kit(kit, workspace=workspace).grade
    return grade["w"] <= 1 and grade["d"] <= 1


def _reason(exc) -> str:
    """The line of a Ray error that says why (Ray wraps it in a long report with a traceback)."""
    text = str(exc)
    refusal = re.search(r"RuntimeError: (node \S+ refuses: .*)", text)
    if refusal:
        return refusal.group(1)
    return text.splitlines()[0] if text else type(exc).__name__


def open_ray(address: str, workspace=None, concurrency=None, isolation=None):
    """A `lackjail batch` runner: one RayJail per (kit, policy, language)."""
    from lackjail.policy import load_policy

    def open_runner(kit, policy, language=None):
        loaded = load_policy(policy)  # a bad name is the lines' fault, said before any actor starts
        if language is not None:
            loaded.check_language(language)
        return RayJail(
            policy,
            kit,
            workspace,
            address=address,
            isolation=isolation,
            concurrency=concurrency,
            language=language,
        )

    return open_runner
