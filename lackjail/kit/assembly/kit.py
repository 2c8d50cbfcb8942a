"""A resolved kit: the tools a program may call, by the names it calls them.

Call names are what cross the wire: a tool name or alias (`read_file`, `r`)
or a pack member (`fs.read`). `names` is what the validator lets a program
mention (pack namespaces, not members); `host_tools` cross to the
controller; `jail_tools` run inside the jail.
"""

from __future__ import annotations


class Kit:
    """Call name -> ToolSpec, the packs' descriptions, the kit's docs, and the toolbox that serves
    them.
    """

    def __init__(
        self, name: str, description: str, entries: dict, packs: dict, docs: tuple, toolbox
    ):
        self.name = name
        self.description = description
        self.specs = dict(entries)
        self.packs = dict(packs)
        self.docs = tuple(docs)
        self._toolbox = toolbox

    @classmethod
    def empty(cls) -> Kit:
        """The kit of no tools ("none"), made without the toolbox's modules: a command that
        runs a program without tools imports none of them (~5 ms)."""
        return cls("none", "", {}, {}, (), None)

    @property
    def toolbox(self):
        """The toolbox that serves the kit's tools (for a kit made without one, the bundled
        toolbox, made on first use)."""
        if self._toolbox is None:
            from lackjail.kit.assembly.toolbox import default_toolbox

            self._toolbox = default_toolbox()
        return self._toolbox

    def __repr__(self):
        return f"Kit({self.name!r}, tools={list(self.specs)})"

    @property
    def names(self) -> tuple:
        return tuple(dict.fromkeys(call.partition(".")[0] for call in self.specs))

    @property
    def host_tools(self) -> tuple:
        return tuple(call for call, spec in self.specs.items() if spec.placement == "host")

    @property
    def jail_tools(self) -> dict:
        return {
            call: spec.jail_target for call, spec in self.specs.items() if spec.placement == "jail"
        }

    @property
    def grade(self) -> dict:
        from lackjail.kit.tools.toolspec import grade_of

        return grade_of(self.specs.values())

    def docs_index(self) -> dict:
        """Doc path -> what it documents ("kit NAME" or "tool CALL"); read them with resolve_doc."""
        index = {path: f"kit {self.name}" for path in self.docs}
        for call, spec in self.specs.items():
            if spec.docs:
                index.setdefault(spec.docs, f"tool {call}")
        return index

    def describe(self) -> str:
        """Signatures, guidance and best practices: what `kit info` prints and prompts include."""
        grade = self.grade
        head = f"kit {self.name}" + (f" - {self.description}" if self.description else "")
        lines = [head, f"grade: w={grade['w']} d={grade['d']}"]
        if not self.specs:
            lines.append("no tools")
        shown_packs = set()
        for call, spec in self.specs.items():
            namespace, dot, _ = call.partition(".")
            if not dot:
                lines += ["", _signature(call, spec)] + [f"    {t}" for t in _prose(spec)]
            elif namespace not in shown_packs:
                shown_packs.add(namespace)
                about = self.packs.get(namespace, "")
                lines += ["", f"{namespace} - {about}" if about else namespace]
                members = [(c, s) for c, s in self.specs.items() if c.startswith(namespace + ".")]
                for member_call, member in members:
                    hint = member.guidance or member.description
                    lines.append(
                        f"    {_signature(member_call, member)}" + (f"  # {hint}" if hint else "")
                    )
                practices = [(c, b) for c, s in members for b in s.best_practices]
                if practices:
                    lines.append("    best practices:")
                    lines += [f"      - {c}: {b}" for c, b in practices]
        if self.docs_index():
            lines += ["", "docs:"] + [
                f"    {path} ({what})" for path, what in self.docs_index().items()
            ]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "grade": self.grade,
            "names": list(self.names),
            "host_tools": list(self.host_tools),
            "jail_tools": {k: list(v) for k, v in self.jail_tools.items()},
            "tools": [{"call": call, **spec.to_dict()} for call, spec in self.specs.items()],
            "packs": dict(self.packs),
            "docs": self.docs_index(),
        }

    def session(self, policy=None, workspace=None, approve=None, on_event=None, dry_run=False):
        """A ToolSession for one run: dispatch, checks, budgets, staged writes and the trace."""
        from lackjail.kit.calls.session import ToolSession

        return ToolSession(
            self, policy, workspace, approve=approve, on_event=on_event, dry_run=dry_run
        )


def _signature(call, spec) -> str:
    tags = [
        t
        for t, on in (
            ("needs approval", spec.approval == "required"),
            ("runs in the jail", spec.placement == "jail"),
        )
        if on
    ]
    return spec.signature(call) + (f"  [{', '.join(tags)}]" if tags else "")


def _prose(spec) -> list[str]:
    lines = [spec.description] if spec.description else []
    for label, text in (
        ("Use", spec.guidance),
        ("Input", spec.input_doc),
        ("Output", spec.output_doc),
    ):
        if text:
            lines.append(f"{label}: {text}")
    documented = [a for a in spec.args if a.description]
    if documented:
        lines.append("Parameters:")
        lines += [
            f"  {a.name} ({a.type}{'' if a.required else ', optional'}): {a.description}"
            for a in documented
        ]
    if spec.best_practices:
        lines.append("Best practices:")
        lines += [f"  - {b}" for b in spec.best_practices]
    return lines
