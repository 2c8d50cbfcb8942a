"""Helpers shared by the fuzz suites."""

import struct


def same(a, b) -> bool:
    """Equal value for value AND type for type (True is not 1, -0.0 is not 0.0, nan is nan)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack(">d", a) == struct.pack(">d", b)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(
            same(k1, k2) and same(v1, v2) for (k1, v1), (k2, v2) in zip(a.items(), b.items())
        )
    return a == b
