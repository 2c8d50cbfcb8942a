"""Host access to a (hostile) workspace: path checks, confined reads, staged writes, commits.
Every host file is opened through `hostfs`, the one door (see its docstring).

root = Root("/path/to/project")         # opened once (a Jail holds one)
ws = Workspace(root)                    # one per run
view = ws.view(budget, writable=True)   # one per tool call
view.read_bytes("README.md"); view.write_bytes("out.txt", b"...")
ws.merge(view); ws.commit()             # or ws.rollback(); ws.diff() for --dry-run
"""

from lackjail.workspace.hostfs import Root, workspace_root
from lackjail.workspace.paths import show
from lackjail.workspace.transaction import StagingArea, Workspace, WorkspaceView

__all__ = ["Root", "StagingArea", "Workspace", "WorkspaceView", "show", "workspace_root"]
