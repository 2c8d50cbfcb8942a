"""The standard library a `python`-level program may import, as one table of data.

Each module is a facade: the jail builds, before it forks a child, a fresh
module object holding exactly the names listed here (no submodule, no module
the real one imported, nothing private), and `import X` or `from X import Y`
finds only those. The validator reads the same table (an unknown module or
name is rejected before anything runs) and `lackjail spec` shows it.

Left out on purpose: helpers that look attributes up by a runtime string
(operator.attrgetter/methodcaller, string.Formatter, functools.singledispatch
and typing.get_type_hints, which evaluate string annotations;
dataclasses.make_dataclass, whose namespace names any attribute), anything
that reads files, the clock's settings or the network (time.tzset, uuid.uuid1,
hashlib.file_digest), printers bound to the process's own streams
(pprint.PrettyPrinter, typing.reveal_type), and metaclasses.
"""

_NAMES = {
    "__future__": "annotations",
    "abc": "ABC abstractmethod",
    "base64": (
        "a85decode a85encode b16decode b16encode b32decode b32encode b32hexdecode "
        "b32hexencode b64decode b64encode b85decode b85encode decodebytes encodebytes "
        "standard_b64decode standard_b64encode urlsafe_b64decode urlsafe_b64encode"
    ),
    "binascii": (
        "Error Incomplete a2b_base64 a2b_hex a2b_qp a2b_uu b2a_base64 b2a_hex b2a_qp b2a_uu "
        "crc32 crc_hqx hexlify unhexlify"
    ),
    "bisect": "bisect bisect_left bisect_right insort insort_left insort_right",
    # no TextCalendar or prmonth/prcal: they print to the process's own stdout
    "calendar": (
        "APRIL AUGUST Calendar DECEMBER Day FEBRUARY FRIDAY HTMLCalendar IllegalMonthError "
        "IllegalWeekdayError JANUARY JULY JUNE MARCH MAY MONDAY Month NOVEMBER OCTOBER "
        "SATURDAY SEPTEMBER SUNDAY THURSDAY TUESDAY WEDNESDAY calendar day_abbr day_name "
        "firstweekday isleap leapdays month month_abbr month_name monthcalendar monthrange "
        "timegm weekday weekheader"
    ),
    "cmath": (
        "acos acosh asin asinh atan atanh cos cosh e exp inf infj isclose isfinite isinf isnan "
        "log log10 nan nanj phase pi polar rect sin sinh sqrt tan tanh tau"
    ),
    "collections": (
        "ChainMap Counter OrderedDict UserDict UserList UserString defaultdict deque namedtuple"
    ),
    # only as `from collections.abc import ...`: the collections facade has no submodule
    "collections.abc": (
        "AsyncGenerator AsyncIterable AsyncIterator Awaitable Buffer ByteString Callable "
        "Collection Container Coroutine Generator Hashable ItemsView Iterable Iterator KeysView "
        "Mapping MappingView MutableMapping MutableSequence MutableSet Reversible Sequence Set "
        "Sized ValuesView"
    ),
    # no contextmanager (it needs yield), chdir or redirect_stdout
    "contextlib": "AbstractContextManager ContextDecorator ExitStack closing nullcontext suppress",
    # Context.run calls what it is given, as a call would
    "contextvars": "Context ContextVar Token copy_context",
    "copy": "Error copy deepcopy",
    "csv": (
        "Dialect DictReader DictWriter Error QUOTE_ALL QUOTE_MINIMAL QUOTE_NONE "
        "QUOTE_NONNUMERIC QUOTE_NOTNULL QUOTE_STRINGS Sniffer excel excel_tab field_size_limit "
        "get_dialect list_dialects reader register_dialect unix_dialect unregister_dialect writer"
    ),
    "dataclasses": (
        "FrozenInstanceError InitVar KW_ONLY MISSING asdict astuple dataclass field fields "
        "is_dataclass replace"
    ),
    "datetime": "MAXYEAR MINYEAR UTC date datetime time timedelta timezone tzinfo",
    "decimal": (
        "BasicContext Clamped Context ConversionSyntax Decimal DecimalException DecimalTuple "
        "DefaultContext DivisionByZero DivisionImpossible DivisionUndefined ExtendedContext "
        "FloatOperation Inexact InvalidContext InvalidOperation MAX_EMAX MAX_PREC MIN_EMIN "
        "MIN_ETINY Overflow ROUND_05UP ROUND_CEILING ROUND_DOWN ROUND_FLOOR ROUND_HALF_DOWN "
        "ROUND_HALF_EVEN ROUND_HALF_UP ROUND_UP Rounded Subnormal Underflow getcontext "
        "localcontext setcontext"
    ),
    "difflib": (
        "Differ HtmlDiff IS_CHARACTER_JUNK IS_LINE_JUNK Match SequenceMatcher context_diff "
        "diff_bytes get_close_matches ndiff restore unified_diff"
    ),
    "enum": "Enum Flag IntEnum IntFlag StrEnum auto unique",
    "fractions": "Fraction",
    # wraps and update_wrapper take the wrapped function only: their `assigned` and
    # `updated` arguments name attributes to copy.
    "functools": (
        "WRAPPER_ASSIGNMENTS WRAPPER_UPDATES cache cached_property cmp_to_key lru_cache partial "
        "partialmethod reduce total_ordering update_wrapper wraps"
    ),
    # hashlib.new takes the names of algorithms_guaranteed only (others would load providers).
    "array": "array typecodes",
    "html": "escape unescape",
    "hashlib": (
        "algorithms_guaranteed blake2b blake2s md5 new sha1 sha224 sha256 sha384 sha3_224 "
        "sha3_256 sha3_384 sha3_512 sha512 shake_128 shake_256"
    ),
    "heapq": "heapify heappop heappush heappushpop heapreplace merge nlargest nsmallest",
    "io": "BytesIO StringIO",
    "itertools": (
        "accumulate batched chain combinations combinations_with_replacement compress count "
        "cycle dropwhile filterfalse groupby islice pairwise permutations product repeat "
        "starmap takewhile tee zip_longest"
    ),
    "json": "JSONDecodeError JSONDecoder JSONEncoder dump dumps load loads",
    "keyword": "iskeyword issoftkeyword kwlist softkwlist",
    "math": (
        "acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees dist "
        "e erf erfc exp exp2 expm1 fabs factorial floor fmod frexp fsum gamma gcd hypot inf "
        "isclose isfinite isinf isnan isqrt lcm ldexp lgamma log log10 log1p log2 modf nan "
        "nextafter perm pi pow prod radians remainder sin sinh sqrt sumprod tan tanh tau trunc "
        "ulp"
    ),
    "numbers": "Complex Integral Number Rational Real",
    "operator": (
        "abs add and_ call concat contains countOf delitem eq floordiv ge getitem gt iadd iand "
        "iconcat ifloordiv ilshift imatmul imod imul index indexOf inv invert ior ipow irshift "
        "is_ is_not isub itemgetter itruediv ixor le length_hint lshift lt matmul mod mul ne "
        "neg not_ or_ pos pow rshift setitem sub truediv truth xor"
    ),
    # pprint and pp print with the program's own print.
    "pprint": "isreadable isrecursive pformat pp pprint saferepr",
    "queue": "Empty Full LifoQueue PriorityQueue Queue SimpleQueue",
    "random": (
        "Random betavariate binomialvariate choice choices expovariate gammavariate gauss "
        "getrandbits getstate lognormvariate normalvariate paretovariate randbytes randint "
        "random randrange sample seed setstate shuffle triangular uniform vonmisesvariate "
        "weibullvariate"
    ),
    "re": (
        "A ASCII DOTALL I IGNORECASE L LOCALE M MULTILINE Match NOFLAG Pattern RegexFlag S U "
        "UNICODE VERBOSE X compile error escape findall finditer fullmatch match purge search "
        "split sub subn"
    ),
    "secrets": "choice compare_digest randbelow randbits token_bytes token_hex token_urlsafe",
    # no shlex class: without a string it reads the process's stdin
    "shlex": "join quote split",
    # mode bits: what a kit tool's stat result means (no call reaches a file)
    "stat": (
        "S_IFBLK S_IFCHR S_IFDIR S_IFIFO S_IFLNK S_IFMT S_IFREG S_IFSOCK S_IMODE S_IRGRP "
        "S_IROTH S_IRUSR S_IRWXG S_IRWXO S_IRWXU S_ISBLK S_ISCHR S_ISDIR S_ISFIFO S_ISGID "
        "S_ISLNK S_ISREG S_ISSOCK S_ISUID S_ISVTX S_IWGRP S_IWOTH S_IWUSR S_IXGRP S_IXOTH "
        "S_IXUSR ST_ATIME ST_CTIME ST_DEV ST_GID ST_INO ST_MODE ST_MTIME ST_NLINK ST_SIZE "
        "ST_UID filemode"
    ),
    "statistics": (
        "NormalDist StatisticsError correlation covariance fmean geometric_mean harmonic_mean "
        "linear_regression mean median median_grouped median_high median_low mode multimode "
        "pstdev pvariance quantiles stdev variance"
    ),
    "string": (
        "Template ascii_letters ascii_lowercase ascii_uppercase capwords digits hexdigits "
        "octdigits printable punctuation whitespace"
    ),
    # what the interpreter is, never what the process holds (argv, modules, frames); stdout
    # and stderr write into the program's output, the recursion limit is the program's own
    # and bounded
    "sys": (
        "byteorder float_info getrecursionlimit hexversion int_info maxsize maxunicode platform "
        "setrecursionlimit stderr stdout version version_info"
    ),
    "struct": "Struct calcsize error iter_unpack pack pack_into unpack unpack_from",
    "textwrap": "TextWrapper dedent fill indent shorten wrap",
    "time": (
        "altzone asctime ctime daylight get_clock_info gmtime localtime mktime monotonic "
        "monotonic_ns perf_counter perf_counter_ns process_time process_time_ns sleep strftime "
        "strptime struct_time thread_time thread_time_ns time time_ns timezone tzname"
    ),
    "typing": (
        "AbstractSet Annotated Any AnyStr ByteString Callable ChainMap ClassVar Collection "
        "Concatenate Container Counter DefaultDict Deque Dict Final FrozenSet Generator Generic "
        "Hashable ItemsView Iterable Iterator KeysView List Literal LiteralString Mapping "
        "MappingView MutableMapping MutableSequence MutableSet NamedTuple Never NewType NoReturn "
        "NotRequired Optional OrderedDict ParamSpec Protocol Required Reversible Self Sequence "
        "Set Sized SupportsAbs SupportsBytes SupportsComplex SupportsFloat SupportsIndex "
        "SupportsInt SupportsRound TYPE_CHECKING Text Tuple Type TypeAlias TypeGuard TypeVar "
        "TypeVarTuple TypedDict Union Unpack ValuesView assert_never assert_type cast final "
        "is_typeddict overload override runtime_checkable"
    ),
    "unicodedata": (
        "bidirectional category combining decimal decomposition digit east_asian_width "
        "is_normalized lookup mirrored name normalize numeric unidata_version"
    ),
    # only as `from urllib.parse import ...` (no network: urllib.request stays out)
    "urllib.parse": (
        "DefragResult ParseResult SplitResult parse_qs parse_qsl quote quote_from_bytes "
        "quote_plus unquote unquote_plus unquote_to_bytes urldefrag urlencode urljoin urlparse "
        "urlsplit urlunparse urlunsplit"
    ),
    "uuid": (
        "NAMESPACE_DNS NAMESPACE_OID NAMESPACE_URL NAMESPACE_X500 SafeUUID UUID uuid3 uuid4 uuid5"
    ),
    "zlib": (
        "DEFLATED MAX_WBITS Z_BEST_COMPRESSION Z_BEST_SPEED Z_DEFAULT_COMPRESSION Z_FINISH "
        "Z_NO_FLUSH Z_SYNC_FLUSH adler32 compress compressobj crc32 decompress decompressobj "
        "error"
    ),
}
# module -> the names its facade holds
FACADES = {module: tuple(names.split()) for module, names in sorted(_NAMES.items())}
# The highest recursion limit sys.setrecursionlimit sets in the jail; a higher one is lowered
# to it. A Python call takes no C stack in CPython 3.12 (a recursion through C is bounded
# apart), so what a deep recursion costs is memory and the time to unwind it: this bounds both.
MAX_RECURSION_LIMIT = 100_000
# A builtin whose use needs a facade module loaded in the child that runs the program, as an
# import would: `type | None` is a typing.Union of the jail's own `type`.
IMPLIED = {"type": "typing"}

# Modules a program reaches for instead of a kit tool, and what to write instead; any other
# module not in FACADES is rejected with the list of those that are.
_FILES = "call a tool of the kit that reads or writes files (read_file, write_file, find_files)"
_NETWORK = "the jail has no network: call a tool of the kit that fetches"
_CODE = "the jail does not load or inspect code: write the code in the program"
_PROCESS = "the jail runs no other process or thread: do the work in the program"
INSTEAD = {
    "os": f"{_FILES}; parameters instead of the environment",
    "os.path": "join paths with '/'.join(...) or an f-string; " + _FILES,
    # sys is a facade: these say what to write instead of the names it leaves out
    "sys": "parameters instead of sys.argv, raise to stop",
    "pathlib": _FILES,
    "shutil": _FILES,
    "glob": _FILES,
    "tempfile": _FILES,
    "fileinput": _FILES,
    "subprocess": _PROCESS,
    "multiprocessing": _PROCESS,
    "threading": _PROCESS,
    "concurrent": _PROCESS,
    "asyncio": _PROCESS,
    "signal": _PROCESS,
    "socket": _NETWORK,
    "ssl": _NETWORK,
    "urllib": _NETWORK + " (urllib.parse: from urllib.parse import ...)",
    "http": _NETWORK,
    "importlib": _CODE,
    "inspect": _CODE,
    "types": _CODE,
    "builtins": _CODE,
    "gc": _CODE,
    "ctypes": _CODE,
    "code": _CODE,
    "codeop": _CODE,
    "dis": _CODE,
    "ast": _CODE,
    "runpy": _CODE,
    "pickle": "use json (import json) for data",
    "marshal": "use json (import json) for data",
    "shelve": _FILES,
    "logging": "use print()",
    "warnings": "use print()",
    "traceback": "a failed run reports its traceback itself",
}
