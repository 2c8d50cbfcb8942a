"""Generating programs from an intent: templates, rules, then models, each checked by the validator.

gen = generate("find all python files and count them", kit)
outcome = delegate(jail, "find all python files and count them")
"""

from lackjail.infer.config import ConfigError, InferenceConfig, ProviderConfig, load_config
from lackjail.infer.pipeline import (
    DelegateResult,
    Generation,
    IntentError,
    check_intent,
    delegate,
    generate,
)
from lackjail.infer.templates import Template, TemplateError, TemplateStore

__all__ = [
    "ConfigError",
    "DelegateResult",
    "Generation",
    "InferenceConfig",
    "IntentError",
    "ProviderConfig",
    "Template",
    "TemplateError",
    "TemplateStore",
    "check_intent",
    "delegate",
    "generate",
    "load_config",
]
