"""Results as JSON: the plain data a run returns, made safe for json.dumps."""

from lackjail import plain

MAX_DEPTH = plain.MAX_DEPTH + 8  # a plain value inside a result, report or trace entry


def jsonable(value, depth=0):
    """Plain data for json.dumps: bytes become text (undecodable bytes escaped)."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return str(value)  # JSON has no NaN or infinity
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(jsonable(k, depth + 1)): jsonable(v, depth + 1) for k, v in value.items()}
    return value
