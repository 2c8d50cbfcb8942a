import pytest
from gate_support import make_tree


@pytest.fixture
def tree(tmp_path):
    """A fresh copy of the fixture tree (tests may write next to it)."""
    return make_tree(tmp_path / "repo")
