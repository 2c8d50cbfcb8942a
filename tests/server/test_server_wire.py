"""What the `lackjail run` client and the user's server say: requests decoded strictly, with a
size cap; the `[server]` key of the user's config; the client's off switch."""

import pytest

from lackjail.server import client, wire
from lackjail.userconfig import ConfigError, server_enabled, user_defaults


def _fields(argv=("lackjail", "run", "-"), env=None):
    environ = {b"HOME": b"/home/u", b"EMPTY": b""} if env is None else env
    streams = ["utf-8\x00strict\x00000"] * 3
    return wire.run_fields("the install", 0o22, streams, list(argv), environ)


def test_a_run_request_reads_back_as_it_was_sent():
    data = wire.request(wire.RUN, _fields(argv=("lackjail", "run", "caf\udce9.lackpy")))
    kind, size = wire.parse_header(data[: wire.HEADER])
    assert (kind, size) == (wire.RUN, len(data) - wire.HEADER)
    run = wire.Run(wire.parse_fields(data[wire.HEADER :]))
    assert run.identity == "the install" and run.umask == 0o22
    assert run.argv == ["lackjail", "run", "caf\udce9.lackpy"]  # undecodable bytes kept
    assert run.environ == {b"HOME": b"/home/u", b"EMPTY": b""}
    assert run.streams == ["utf-8\x00strict\x00000"] * 3


@pytest.mark.parametrize(
    "header",
    [
        b"LJS0r\0\0\0\0",  # another magic
        b"LJS1x\0\0\0\0",  # no such kind
        wire.MAGIC + wire.RUN + (wire.MAX_BODY + 1).to_bytes(4, "big"),  # over the cap
        b"LJS1r",  # cut short
    ],
)
def test_a_header_that_is_not_a_requests_is_refused(header):
    with pytest.raises(wire.BadRequest):
        wire.parse_header(header)


@pytest.mark.parametrize(
    "body",
    [
        b"\0\0\0",  # a length cut short
        b"\0\0\0\x05abc",  # a field past the end
        b"\0\0\0\0" * (wire.MAX_FIELDS + 1),  # too many fields
    ],
)
def test_fields_that_do_not_fill_the_body_exactly_are_refused(body):
    with pytest.raises(wire.BadRequest):
        wire.parse_fields(body)


@pytest.mark.parametrize(
    "fields",
    [
        _fields()[:5],  # fields missing
        [b"x", b"0o22", *_fields()[2:]],  # a umask that is no decimal number
        [b"x", b"4096", *_fields()[2:]],  # a umask over 0o777
        [*_fields()[:5], b"99", *_fields()[6:]],  # more arguments than there are fields
        [*_fields(env={})[:9], b"NO_EQUALS"],  # an environment entry without '='
        [*_fields(env={})[:9], b"=value"],  # nor a name
        [*_fields(env={})[:9], b"A=b\0c"],  # a NUL in it
        _fields(argv=("lackjail", "run", "a\0b")),  # a NUL in an argument
    ],
)
def test_a_run_request_with_a_bad_field_is_refused(fields):
    with pytest.raises(wire.BadRequest):
        wire.Run(fields)


def test_messages_are_a_letter_and_a_signed_number():
    assert wire.parse_message(wire.message(wire.EXITED, 130)) == (wire.EXITED, 130)
    assert wire.parse_message(wire.message(wire.KILLED, -1)) == (wire.KILLED, -1)
    assert len(wire.message(wire.COMMIT)) == wire.MESSAGE


@pytest.mark.parametrize("value", ["0", "no", "off", "false", " OFF "])
def test_lackjail_server_turns_the_server_off(monkeypatch, value):
    monkeypatch.setenv("LACKJAIL_SERVER", value)
    assert not client.enabled()


@pytest.mark.parametrize("value", ["1", "yes", ""])
def test_anything_else_leaves_it_on(monkeypatch, value):
    monkeypatch.setenv("LACKJAIL_SERVER", value)
    assert client.enabled()


def _config(tmp_path, monkeypatch, text: str):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "lackjail").mkdir(exist_ok=True)
    (tmp_path / "lackjail" / "config.toml").write_text(text)


def test_the_user_config_turns_the_server_off(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert server_enabled()  # no config: on
    _config(tmp_path, monkeypatch, "[server]\nenabled = false\n")
    assert not server_enabled()
    _config(tmp_path, monkeypatch, "[server]\nenabled = true\n")
    assert server_enabled()


@pytest.mark.parametrize(
    "text, says",
    [
        ('[server]\nenabled = "no"\n', "'server.enabled' must be true or false"),
        ("[server]\nidle = 5\n", "unknown key 'server.idle'; known keys: enabled"),
        ('server = "off"\n', "'server' must be a table"),
    ],
)
def test_a_bad_server_table_names_the_key_and_the_fix(tmp_path, monkeypatch, text, says):
    _config(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError, match=says):
        server_enabled()
    with pytest.raises(ConfigError, match=says):  # every command that reads the config says so
        user_defaults()


def test_the_commands_streams_are_set_up_as_the_clients_were(tmp_path):
    """Encoding, errors, line buffering, write-through and an unbuffered binary layer (-u) as
    the client's interpreter chose them; an unknown encoding falls back to UTF-8."""
    import io
    import os

    from lackjail.server.serve import _stream

    read, write = os.pipe()
    tty_like = _stream(write, "latin-1\x00backslashreplace\x00100")
    assert (tty_like.encoding, tty_like.errors) == ("latin-1", "backslashreplace")
    assert tty_like.line_buffering and not tty_like.write_through
    assert isinstance(tty_like.buffer, io.BufferedWriter)
    unbuffered = _stream(write, "utf-8\x00strict\x00011")
    assert not unbuffered.line_buffering and unbuffered.write_through
    assert isinstance(unbuffered.buffer, io.FileIO)
    assert _stream(write, "no-such-codec\x00strict\x00000").encoding == "utf-8"
    os.close(read)
    os.close(write)
