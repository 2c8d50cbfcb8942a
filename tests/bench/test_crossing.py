"""The crossing floor (`lackjail bench`'s tools section): each way of waiting gives a round
trip time, and its peer processes end. Nothing here asserts a speed."""

import os

from lackjail.bench import figures as bench
from lackjail.bench.crossing import crossing_figures

NAMES = [
    bench.CROSS_PIPE_SLEEP,
    bench.CROSS_PIPE_SPIN,
    bench.CROSS_FRAMED,
    bench.CROSS_EVENTFD,
    bench.CROSS_SHM_SPIN,
]


def test_every_way_of_waiting_gives_a_round_trip_and_leaves_no_process():
    figures = crossing_figures(n=50)
    for name in NAMES:
        if name in figures.unavailable:  # one CPU: two spinners would only take turns
            assert os.cpu_count() == 1 and name == bench.CROSS_SHM_SPIN
            continue
        assert isinstance(figures[name], float) and figures[name] > 0, name
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        pid = 0
    assert pid == 0  # every peer was reaped: none is left to reap
