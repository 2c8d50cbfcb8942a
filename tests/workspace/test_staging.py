"""Staged writes (`workspace/staging.py`): kept apart from the workspace until a commit."""

import os

import pytest

from lackjail.workspace.staging import StagingArea


def test_what_is_staged_reads_back_and_goes_with_close():
    area = StagingArea()
    first, second = area.write(b"one"), area.write(b"two")
    assert first != second
    assert (area.read(first), area.read(second)) == (b"one", b"two")
    folder = area._dir
    assert folder is not None and os.path.isdir(folder)
    area.discard(first)
    with pytest.raises(FileNotFoundError):
        area.read(first)
    area.close()
    assert not os.path.exists(folder)  # nothing staged outlives the run


def test_an_area_that_staged_nothing_has_nothing_to_read_and_no_folder():
    area = StagingArea()
    with pytest.raises(FileNotFoundError):
        area.read("00000001")
    area.discard("00000001")  # nothing to discard: no error
    area.close()
    assert area._dir is None
