"""From an intent to a validated program, cheapest tier first; then, optionally, the jailed run.

Every program, whichever tier wrote it, passes the same validator before it
is returned, and the run validates it again. A tier that cannot help (no
match, unavailable, failing, or only invalid programs) leaves a note and the
next tier is tried; nothing a model or an intent says can raise out of here.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from lackjail.errors import InputError
from lackjail.infer import anthropic, ollama, openai_compat, prompt, ruletier
from lackjail.infer.config import InferenceConfig, load_config
from lackjail.infer.errors import ProviderError
from lackjail.infer.sanitize import sanitize
from lackjail.infer.templates import TemplateError, TemplateStore

if TYPE_CHECKING:
    from lackjail.api import Result

MAX_INTENT_CHARS = 8192
PROVIDERS = {"ollama": ollama, "anthropic": anthropic, "openai": openai_compat}  # kind -> module


class IntentError(InputError, ValueError):
    """An intent that cannot be used (empty, too long, not text)."""


@dataclass
class Generation:
    """What generation produced: the program and its tier, or None and every reason why not."""

    intent: str
    program: str | None = None
    tier: str | None = None
    source: str | None = None  # the template, rule or model that wrote the program
    attempts: list = field(default_factory=list)  # {tier, source?, program, errors, ms}
    notes: list = field(
        default_factory=list
    )  # {tier, reason, unavailable?}: tiers that gave nothing
    timings: dict = field(
        default_factory=lambda: {"tiers": {}}
    )  # {tiers: {tier: ms}, total_ms, run_ms?}

    @property
    def ok(self) -> bool:
        return self.program is not None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class DelegateResult:
    """A Generation and, when it was run, the jail's Result."""

    generation: Generation
    result: Result | None = None  # lackjail.api.Result, or None when not run / nothing generated

    @property
    def status(self) -> str:
        if not self.generation.ok:
            return "no_program"
        return self.result.status if self.result is not None else "generated"

    @property
    def exit_code(self) -> int:
        """0 ok (or generated, not run); 1 ran and failed; 2 nothing valid was generated or it was
        rejected.
        """
        if not self.generation.ok:
            return 2
        return self.result.exit_code if self.result is not None else 0

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            **self.generation.to_dict(),
            "result": self.result.to_dict() if self.result is not None else None,
        }


def check_intent(intent) -> str:
    """INTENT stripped, or IntentError: callers check before they start anything costly."""
    if not isinstance(intent, str):
        raise IntentError(f"an intent is text, not {type(intent).__name__}")
    if not intent.strip():
        raise IntentError("the intent is empty; say what the program should do")
    if len(intent) > MAX_INTENT_CHARS:
        raise IntentError(f"the intent is longer than {MAX_INTENT_CHARS} characters")
    return intent.strip()


def generate(
    intent: str,
    kit=None,
    params=(),
    *,
    config=None,
    root=None,
    check=None,
    language="lackpy",
    on_ask=None,
) -> Generation:
    """A validated program for INTENT using KIT's tools and the PARAMS names.

    CONFIG: an InferenceConfig, the `[inference]` table as a dict, or None to read
    ROOT/.lackjail/config.toml (ROOT defaults to the current directory; its
    `.lackjail/templates` holds the templates). CHECK(program) -> ValidationResult
    overrides the default validation against the kit and params (a Jail passes its own).
    LANGUAGE: the level programs are written for (the model prompt describes it).
    ON_ASK(tier, provider) is called before each request to a model (to say what is awaited).
    Raises IntentError for an unusable intent and ConfigError for a bad config.
    """
    intent = check_intent(intent)
    root = root if root is not None else os.getcwd()  # a workspace Root is kept as it is
    if config is None:
        config = load_config(root)
    elif isinstance(config, dict):
        config = InferenceConfig.from_dict(config, "inference config")
    params = tuple(params)
    # every call name: a pack's members one by one ("fs.read"), as the validator takes them
    names = tuple(getattr(kit, "specs", None) or kit.names) if kit is not None else ()
    if check is None:
        from lackjail import lang

        def check(program):
            return lang.validate(program, tools=names, params=params, language=language)

    run = _Run(intent, kit, params, config, root, check, language, on_ask)
    run.gen.notes.extend(
        {"tier": "config", "reason": n, "unavailable": False} for n in config.notes
    )
    started = time.perf_counter()
    for tier in config.order:
        tier_started = time.perf_counter()
        if tier == "templates":
            done = run.templates()
        elif tier == "rules":
            done = run.rules()
        else:
            done = run.model(tier, config.providers[tier])
        run.gen.timings["tiers"][tier] = _ms(tier_started)
        if done:
            break
    run.gen.timings["total_ms"] = _ms(started)
    return run.gen


class _Run:
    """One generation's state: the tiers append attempts and notes to one Generation."""

    def __init__(self, intent, kit, params, config, root, check, language, on_ask=None):
        self.gen = Generation(intent)
        self.on_ask = on_ask
        self.kit, self.params, self.language = kit, params, language
        self.config, self.root, self.check = config, root, check

    def _try(self, tier: str, program: str, source: str, started: float) -> list:
        """Validate PROGRAM (written since STARTED); keep it if valid. Returns the errors, empty
        when accepted.
        """
        if not program.strip():
            errors = [{"message": "the program is empty"}]
        else:
            verdict = self.check(program)
            errors = (
                []
                if verdict.valid
                else [e.to_dict() for e in verdict.errors] or [{"message": "rejected"}]
            )
        self.gen.attempts.append(
            {
                "tier": tier,
                "source": source,
                "program": program,
                "errors": errors,
                "ms": _ms(started),
            }
        )
        if not errors:
            self.gen.program, self.gen.tier, self.gen.source = program, tier, source
        return errors

    def _note(self, tier: str, reason: str, unavailable: bool = False) -> bool:
        self.gen.notes.append({"tier": tier, "reason": reason, "unavailable": unavailable})
        return False

    def templates(self) -> bool:
        matches, problems = TemplateStore.at(self.root).matches(self.gen.intent)
        for problem in problems:
            self._note("templates", f"skipped {problem}")
        for template, values in matches:
            started = time.perf_counter()
            try:
                program = template.instantiate(values)
            except TemplateError as exc:
                self._note("templates", f"{template.name}: {exc}")
                continue
            if not self._try("templates", program, template.name, started):
                return True
        return self._note(
            "templates",
            "no matching template's program validates"
            if matches
            else "no template matches the intent",
        )

    def rules(self) -> bool:
        started = time.perf_counter()
        found = ruletier.generate(self.gen.intent, self.kit)
        if found is None:
            return self._note("rules", "no rule matches the intent with this kit's tools")
        name, program = found
        if not self._try("rules", program, name, started):
            return True
        return self._note("rules", f"rule {name}'s program does not validate")

    def model(self, tier: str, provider) -> bool:
        system = prompt.system_prompt(self.language, self.kit, self.params)
        messages = [{"role": "user", "content": prompt.request(self.gen.intent)}]
        why = PROVIDERS[provider.kind].unavailable(provider)
        if why:  # seen at once: no key, no server here; nothing imported, nobody waits
            return self._note(tier, why, unavailable=True)
        for _ in range(1 + self.config.feedback_rounds):
            started = time.perf_counter()
            if self.on_ask is not None:
                self.on_ask(tier, provider)
            try:
                reply = _within(provider, system, messages)
            except ProviderError as exc:
                return self._note(tier, exc.reason, exc.unavailable)
            program = sanitize(reply)
            errors = self._try(tier, program, provider.model, started)
            if not errors:
                return True
            messages += [
                {"role": "assistant", "content": program or "(no program)"},
                {"role": "user", "content": prompt.feedback(errors)},
            ]
        return self._note(tier, f"no valid program after {1 + self.config.feedback_rounds} replies")


def _within(provider, system: str, messages: list) -> str:
    """PROVIDER's reply, or a ProviderError once its timeout has passed: the clients' own
    timeouts bound each read and each retry, not the whole call. A call given up on is left to
    end on its own (its client times out too) in a daemon thread."""
    outcome: list = []

    def call():
        try:
            outcome.append(PROVIDERS[provider.kind].complete(provider, system, messages))
        except BaseException as exc:  # handed to the caller: nothing is lost in the thread
            outcome.append(exc)

    thread = threading.Thread(target=call, name=f"lackjail-{provider.name}", daemon=True)
    thread.start()
    thread.join(provider.timeout)
    if not outcome:
        raise ProviderError(
            f"{provider.name} ({provider.model}) did not answer within {provider.timeout:g}s "
            "(inference.provider_timeout or --provider-timeout sets how long)"
        )
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def delegate(
    jail, intent: str, params=None, *, run: bool = True, config=None, root=None, on_ask=None
) -> DelegateResult:
    """Generate a program for INTENT with JAIL's kit and limits, and (RUN) run it in JAIL.

    A template's success or failure count is updated after its program runs.
    """
    params = dict(params or {})
    generation = generate(
        intent,
        jail.kit,
        tuple(params),
        config=config,
        root=root,
        check=lambda program: jail.check(program, params),
        language=jail.checker.language,
        on_ask=on_ask,
    )
    outcome = DelegateResult(generation)
    if generation.ok and run:
        started = time.perf_counter()
        outcome.result = jail.run(generation.program, params)
        generation.timings["run_ms"] = _ms(started)
        if generation.tier == "templates":
            store = TemplateStore.at(root if root is not None else os.getcwd())
            if not store.record(generation.source or "", outcome.result.status == "ok"):
                generation.notes.append(
                    {
                        "tier": "templates",
                        "unavailable": False,
                        "reason": f"could not update the counts of {generation.source}",
                    }
                )
    return outcome


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
