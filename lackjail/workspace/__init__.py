"""Host access to a (hostile) workspace: path checks, confined reads, staged writes, commits.
Every host file is opened through `hostfs`, the one door (see its docstring).

root = Root("/path/to/project")         # opened once (a Jail holds one)
ws = Workspace(root)                    # one per run
view = ws.view(budget, writable=True)   # one per tool call
view.read_bytes("README.md"); view.write_bytes("out.txt", b"...")
ws.merge(view); ws.commit()             # or ws.rollback(); ws.diff() for --dry-run

The names below load on first use: a command that only opens a folder or reads its config
does not import the staging and commit machinery.
"""

from lackjail.lazy import exports

TYPE_CHECKING = False  # typing's own costs an import; the type checker reads this name alike
if TYPE_CHECKING:
    from lackjail.workspace.hostfs import Root, workspace_root
    from lackjail.workspace.paths import show
    from lackjail.workspace.transaction import StagingArea, Workspace, WorkspaceView

_EXPORTS = {
    "Root": "lackjail.workspace.hostfs",
    "workspace_root": "lackjail.workspace.hostfs",
    "show": "lackjail.workspace.paths",
    "StagingArea": "lackjail.workspace.transaction",
    "Workspace": "lackjail.workspace.transaction",
    "WorkspaceView": "lackjail.workspace.transaction",
}

__all__ = ["Root", "StagingArea", "Workspace", "WorkspaceView", "show", "workspace_root"]


__getattr__ = exports(__name__, _EXPORTS, globals())
