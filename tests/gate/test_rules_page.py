"""docs/rules.md is made from the rule tables and up to date; every rule a SARIF log can
name has its anchor there; helpUri points at it where the package's metadata says where
the page is, and is left out (not pointed at a page that does not exist) where it does not."""

import json
import re
from urllib.parse import unquote

from gate_support import ROOT

from lackjail.gate import rules_page, sarif
from lackjail.gate.report import GateReport

PAGE = ROOT / "docs" / "rules.md"


def test_the_rules_page_is_up_to_date():
    assert PAGE.read_text(encoding="utf-8") == rules_page.render(), (
        "docs/rules.md is stale: python -m lackjail.gate.rules_page > docs/rules.md"
    )


def descriptors():
    log = json.loads(sarif.render_sarif(GateReport([], "ci", "none", False, str(ROOT))))
    return log["runs"][0]["tool"]["driver"]["rules"]


def test_every_rule_a_log_names_has_its_anchor(monkeypatch):
    monkeypatch.setattr(sarif, "help_base", lambda: "https://example.org/x/docs/rules.md")
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', PAGE.read_text(encoding="utf-8")))
    rules = descriptors()
    assert len(rules) >= 60
    for rule in rules:
        page, _, fragment = rule["helpUri"].partition("#")
        assert page == "https://example.org/x/docs/rules.md"
        assert unquote(fragment) in anchors, rule["id"]


def test_the_page_comes_from_the_metadata(monkeypatch):
    import importlib.metadata

    def metadata(urls):
        return lambda name: type("M", (), {"get_all": lambda self, key: urls})()

    cases = [
        (["Repository, https://git.example/lj"], "https://git.example/lj/blob/main/docs/rules.md"),
        (["Rules, https://docs.example/rules"], "https://docs.example/rules"),
        (["Homepage, https://example.org"], ""),
        ([], ""),
    ]
    for urls, expected in cases:
        monkeypatch.setattr(importlib.metadata, "metadata", metadata(urls))
        sarif.help_base.cache_clear()
        assert sarif.help_base() == expected
    sarif.help_base.cache_clear()
    monkeypatch.undo()
    sarif.help_base.cache_clear()
    if not sarif.help_base():
        assert all("helpUri" not in rule for rule in descriptors())
