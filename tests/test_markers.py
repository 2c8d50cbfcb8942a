"""The `nsjail` marker is on every test that runs the real jail, and on no other."""


def test_a_test_that_needs_the_real_jail_is_marked(request, require_nsjail):
    assert request.node.get_closest_marker("nsjail") is not None


def test_a_test_that_does_not_is_not(request):
    assert request.node.get_closest_marker("nsjail") is None
