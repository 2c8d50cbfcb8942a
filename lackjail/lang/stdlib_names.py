"""What the real modules behind the python level's facades hold, in this CPython (3.12).

A facade leaves names out on purpose (random._os, operator.attrgetter, sys.modules): a
program naming one is refused before it runs, since CPython would find it. A public name
the real module lacks too (re.PatternError, new in 3.13) fails the same way in the jail
and in CPython, so the python level accepts it: the facade raises CPython's own
AttributeError, and `from sys import nonexistent` its ImportError. The validator runs in
the jail too, where no module can be imported: hence a table, made from this interpreter's
modules (tests/lang/test_python_level.py compares, and prints the table when they differ).
"""

_LEFT_OUT = {
    "abc": (
        "ABCMeta abstractclassmethod abstractproperty abstractstaticmethod get_cache_token "
        "update_abstractmethods"
    ),
    "array": "ArrayType",
    "base64": "MAXBINSIZE MAXLINESIZE binascii bytes_types decode encode main re struct",
    "binascii": "",
    "bisect": "",
    "cmath": "",
    "collections": "abc",
    "collections.abc": "",
    "contextlib": (
        "AbstractAsyncContextManager AsyncContextDecorator AsyncExitStack GenericAlias "
        "MethodType abc aclosing asynccontextmanager chdir contextmanager deque os "
        "redirect_stderr redirect_stdout sys wraps"
    ),
    "contextvars": "",
    "copy": "dispatch_table error",
    "csv": "StringIO re types",
    "dataclasses": (
        "Field FunctionType GenericAlias abc copy functools inspect itertools keyword "
        "make_dataclass re sys types"
    ),
    "datetime": "datetime_CAPI",
    "decimal": "HAVE_CONTEXTVAR HAVE_THREADS",
    "difflib": "GenericAlias",
    "enum": (
        "CONFORM CONTINUOUS DynamicClassAttribute EJECT EnumCheck EnumMeta EnumType "
        "FlagBoundary KEEP MappingProxyType NAMED_FLAGS ReprEnum STRICT UNIQUE bin bltns "
        "global_enum global_enum_repr global_flag_repr global_str member nonmember "
        "pickle_by_enum_name pickle_by_global_name property reduce show_flag_values sys "
        "verify"
    ),
    "fractions": "Decimal functools math numbers operator re sys",
    "functools": (
        "GenericAlias RLock get_cache_token namedtuple recursive_repr singledispatch "
        "singledispatchmethod"
    ),
    "hashlib": "algorithms_available file_digest pbkdf2_hmac scrypt",
    "heapq": "",
    "html": "entities",
    "io": (
        "BlockingIOError BufferedIOBase BufferedRWPair BufferedRandom BufferedReader "
        "BufferedWriter DEFAULT_BUFFER_SIZE FileIO IOBase IncrementalNewlineDecoder RawIOBase "
        "SEEK_CUR SEEK_END SEEK_SET TextIOBase TextIOWrapper UnsupportedOperation abc open "
        "open_code text_encoding"
    ),
    "itertools": "",
    "json": "codecs decoder detect_encoding encoder scanner",
    "keyword": "",
    "math": "",
    "numbers": "ABCMeta abstractmethod",
    "operator": "attrgetter methodcaller",
    "pprint": "PrettyPrinter re",
    "queue": "deque heappop heappush threading time types",
    "random": "BPF LOG4 NV_MAGICCONST RECIP_BPF SG_MAGICCONST SystemRandom TWOPI",
    "re": "DEBUG Scanner T TEMPLATE copyreg enum functools template",
    "secrets": "DEFAULT_ENTROPY SystemRandom base64",
    "shlex": "StringIO deque os re shlex sys",
    "stat": (
        "FILE_ATTRIBUTE_ARCHIVE FILE_ATTRIBUTE_COMPRESSED FILE_ATTRIBUTE_DEVICE "
        "FILE_ATTRIBUTE_DIRECTORY FILE_ATTRIBUTE_ENCRYPTED FILE_ATTRIBUTE_HIDDEN "
        "FILE_ATTRIBUTE_INTEGRITY_STREAM FILE_ATTRIBUTE_NORMAL "
        "FILE_ATTRIBUTE_NOT_CONTENT_INDEXED FILE_ATTRIBUTE_NO_SCRUB_DATA "
        "FILE_ATTRIBUTE_OFFLINE FILE_ATTRIBUTE_READONLY FILE_ATTRIBUTE_REPARSE_POINT "
        "FILE_ATTRIBUTE_SPARSE_FILE FILE_ATTRIBUTE_SYSTEM FILE_ATTRIBUTE_TEMPORARY "
        "FILE_ATTRIBUTE_VIRTUAL SF_APPEND SF_ARCHIVED SF_IMMUTABLE SF_NOUNLINK SF_SNAPSHOT "
        "S_ENFMT S_IEXEC S_IFDOOR S_IFPORT S_IFWHT S_IREAD S_ISDOOR S_ISPORT S_ISWHT S_IWRITE "
        "UF_APPEND UF_COMPRESSED UF_HIDDEN UF_IMMUTABLE UF_NODUMP UF_NOUNLINK UF_OPAQUE"
    ),
    "statistics": (
        "Counter Decimal Fraction LinearRegression bisect_left bisect_right count defaultdict "
        "erf exp fabs fsum groupby hypot itemgetter log math namedtuple numbers random reduce "
        "repeat sqrt sumprod sys tau"
    ),
    "string": "Formatter",
    "struct": "",
    "sys": (
        "abiflags activate_stack_trampoline addaudithook api_version argv audit "
        "base_exec_prefix base_prefix breakpointhook builtin_module_names call_tracing "
        "copyright deactivate_stack_trampoline displayhook dont_write_bytecode exc_info "
        "excepthook exception exec_prefix executable exit flags float_repr_style "
        "get_asyncgen_hooks get_coroutine_origin_tracking_depth get_int_max_str_digits "
        "getallocatedblocks getdefaultencoding getdlopenflags getfilesystemencodeerrors "
        "getfilesystemencoding getprofile getrefcount getsizeof getswitchinterval gettrace "
        "getunicodeinternedsize hash_info implementation intern is_finalizing "
        "is_stack_trampoline_active meta_path modules monitoring orig_argv path path_hooks "
        "path_importer_cache platlibdir prefix pycache_prefix set_asyncgen_hooks "
        "set_coroutine_origin_tracking_depth set_int_max_str_digits setdlopenflags setprofile "
        "setswitchinterval settrace stdin stdlib_module_names thread_info unraisablehook "
        "warnoptions"
    ),
    "textwrap": "re",
    "time": (
        "CLOCK_BOOTTIME CLOCK_MONOTONIC CLOCK_MONOTONIC_RAW CLOCK_PROCESS_CPUTIME_ID "
        "CLOCK_REALTIME CLOCK_TAI CLOCK_THREAD_CPUTIME_ID clock_getres clock_gettime "
        "clock_gettime_ns clock_settime clock_settime_ns pthread_getcpuclockid tzset"
    ),
    "typing": (
        "ABCMeta AsyncContextManager AsyncGenerator AsyncIterable AsyncIterator Awaitable "
        "BinaryIO CT_co ContextManager Coroutine EXCLUDED_ATTRIBUTES ForwardRef GenericAlias "
        "IO KT Match MethodDescriptorType MethodWrapperType NamedTupleMeta ParamSpecArgs "
        "ParamSpecKwargs Pattern T T_co T_contra TextIO TypeAliasType VT VT_co V_co "
        "WrapperDescriptorType abstractmethod clear_overloads collections contextlib copyreg "
        "dataclass_transform defaultdict functools get_args get_origin get_overloads "
        "get_type_hints io no_type_check no_type_check_decorator operator re reveal_type "
        "stdlib_re sys types warnings"
    ),
    "unicodedata": "UCD ucd_3_2_0",
    "uuid": (
        "Enum RESERVED_FUTURE RESERVED_MICROSOFT RESERVED_NCS RFC_4122 bytes_ getnode int_ "
        "main os platform sys uuid1"
    ),
    "zlib": (
        "DEF_BUF_SIZE DEF_MEM_LEVEL ZLIB_RUNTIME_VERSION ZLIB_VERSION Z_BLOCK "
        "Z_DEFAULT_STRATEGY Z_FILTERED Z_FIXED Z_FULL_FLUSH Z_HUFFMAN_ONLY Z_NO_COMPRESSION "
        "Z_PARTIAL_FLUSH Z_RLE Z_TREES"
    ),
}
# module -> the public names its real module has and its facade leaves out
LEFT_OUT = {module: frozenset(names.split()) for module, names in _LEFT_OUT.items()}
# Modules whose real module has no __file__ (built into the interpreter): CPython's
# "cannot import name 'x' from 'sys' (unknown location)" is then the facade's word for word.
# For any other, CPython names the module's file, which the facade has not.
NO_FILE = frozenset({"itertools", "sys", "time"})


def lacks(module: str, name: str) -> bool:
    """Does the real MODULE lack the public NAME, so that CPython too fails to find it?
    False for a private name, a module outside the table, and one whose real module makes
    names up (a module __getattr__: calendar's and urllib.parse's deprecated names)."""
    names = LEFT_OUT.get(module)
    return names is not None and name[:1] != "_" and name not in names
