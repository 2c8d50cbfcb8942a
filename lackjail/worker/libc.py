"""The C library functions the worker calls (prctl, malloc_trim, ...) and the few C types
they need, made from _ctypes as the ctypes package makes them: importing ctypes
costs every jail's start ~1.2 ms of CPU for ~40 types and helpers never used here.
"""

import _ctypes
import os


class c_int(_ctypes._SimpleCData):
    _type_ = "i"


class c_ushort(_ctypes._SimpleCData):
    _type_ = "H"


class c_uint32(_ctypes._SimpleCData):
    _type_ = "I"


class c_void_p(_ctypes._SimpleCData):
    _type_ = "P"


class c_char(_ctypes._SimpleCData):
    _type_ = "c"


class _Function(_ctypes.CFuncPtr):
    """A C function returning int, errno saved for get_errno (ctypes.CDLL(None,
    use_errno=True)'s functions are these)."""

    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = c_int


# the process's own symbols: libc's among them
_PROCESS = _ctypes.dlopen(None, os.RTLD_LOCAL)  # type: ignore[arg-type]


def function(name: str) -> _Function:
    """The C library's function NAME (returning int, errno kept for get_errno)."""
    return _Function(_ctypes.dlsym(_PROCESS, name))


prctl = function("prctl")
malloc_trim = function("malloc_trim")
Structure = _ctypes.Structure
get_errno = _ctypes.get_errno
byref = _ctypes.byref
addressof = _ctypes.addressof


def char_array(data: bytes):
    """A C char array holding a copy of DATA (ctypes.create_string_buffer, no NUL added)."""

    class Array(_ctypes.Array):
        _type_ = c_char
        _length_ = len(data)

    return Array.from_buffer_copy(data)
