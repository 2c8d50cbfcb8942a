"""Generating programs from an intent: templates, rules, then models, each checked by the validator.

gen = generate("find all python files and count them", kit)
outcome = delegate(jail, "find all python files and count them")

The names load on first use: `lackjail run` imports `lackjail.infer.sanitize` alone (to unwrap
a fenced program) and must not pay for the tiers.
"""

import importlib

_WHERE = {
    "ConfigError": "config",
    "InferenceConfig": "config",
    "ProviderConfig": "config",
    "load_config": "config",
    "DelegateResult": "pipeline",
    "Generation": "pipeline",
    "IntentError": "pipeline",
    "check_intent": "pipeline",
    "delegate": "pipeline",
    "generate": "pipeline",
    "Template": "templates",
    "TemplateError": "templates",
    "TemplateStore": "templates",
}


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = sorted(_WHERE)
