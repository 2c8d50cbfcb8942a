"""The lackpy language as data: allowed nodes and operators, builtins, forbidden names, rule ids.

Everything here is an allowlist or a named denial; the validator and the spec
both read these tables, so the language is defined in exactly one place.
"""

import _ast as ast  # the node classes: ast.py would bring re and enum into every jail

from .facades import FACADES

# The language levels, strictest first; `lackpy` is the default and exactly the
# seed's grammar; `extended` adds what models write (see EXTENDED_NODES); `python`
# adds classes, imports of the curated standard library and the rest of PYTHON_NODES.
LANGUAGES = ("lackpy", "extended", "python")
DEFAULT_LANGUAGE = "lackpy"

# Node types a program may contain. Lambda is further restricted to the value
# of a `key=` argument; contexts and operators are listed separately below.
ALLOWED_NODES = (
    ast.Module,
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.For,
    ast.If,
    ast.Call,
    ast.keyword,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.Starred,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.comprehension,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.BinOp,
    ast.IfExp,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.Constant,
    ast.Lambda,
    ast.arguments,
    ast.arg,
)

# What the extended level adds. Still rejected there: import, class, global,
# nonlocal, yield, await, with, del, match, decorators, walrus, try/except*.
EXTENDED_NODES = (
    ast.FunctionDef,
    ast.Return,
    ast.While,
    ast.Try,
    ast.ExceptHandler,
    ast.Raise,
    ast.Assert,
    ast.Break,
    ast.Continue,
    ast.Pass,
    ast.GeneratorExp,
)

# What the python level adds to the extended level's nodes. Still rejected there:
# async/await, try/except*, type parameters and `type` aliases.
PYTHON_NODES = (
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.alias,
    ast.With,
    ast.withitem,
    ast.Global,
    ast.Nonlocal,
    ast.Delete,
    ast.NamedExpr,
    ast.AnnAssign,
    ast.Yield,
    ast.YieldFrom,
    ast.Match,
    ast.match_case,
    ast.MatchValue,
    ast.MatchSingleton,
    ast.MatchSequence,
    ast.MatchMapping,
    ast.MatchClass,
    ast.MatchStar,
    ast.MatchAs,
    ast.MatchOr,
)

# Exception classes a program at the extended level may name (catch, raise,
# isinstance). None of them is BaseException or outside Exception, so nothing
# here catches the runner's stop verdicts; ToolError is the jail's own.
EXCEPTION_NAMES = (
    "Exception",
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "IndexError",
    "KeyError",
    "LookupError",
    "NameError",
    "NotImplementedError",
    "OverflowError",
    "RecursionError",
    "RuntimeError",
    "StopIteration",
    "TypeError",
    "UnicodeError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "ValueError",
    "ZeroDivisionError",
    "ToolError",
)

# What the python level adds to them: every other exception class of the builtins, the
# BaseException ones too (a program's own classes and a facade's are named as well: `except
# json.JSONDecodeError`). A handler that catches a stop verdict does not keep the program
# running: the runner raises the verdict again at the program's next line.
PYTHON_EXCEPTION_NAMES = (
    "BaseException",
    "BaseExceptionGroup",
    "GeneratorExit",
    "KeyboardInterrupt",
    "StopAsyncIteration",
    "SystemExit",
    "BlockingIOError",
    "BrokenPipeError",
    "BufferError",
    "BytesWarning",
    "ChildProcessError",
    "ConnectionAbortedError",
    "ConnectionError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "DeprecationWarning",
    "EOFError",
    "EncodingWarning",
    "EnvironmentError",
    "ExceptionGroup",
    "FileExistsError",
    "FileNotFoundError",
    "FloatingPointError",
    "FutureWarning",
    "IOError",
    "ImportError",
    "ImportWarning",
    "IndentationError",
    "InterruptedError",
    "IsADirectoryError",
    "MemoryError",
    "ModuleNotFoundError",
    "NotADirectoryError",
    "OSError",
    "PendingDeprecationWarning",
    "PermissionError",
    "ProcessLookupError",
    "ReferenceError",
    "ResourceWarning",
    "RuntimeWarning",
    "SyntaxError",
    "SyntaxWarning",
    "SystemError",
    "TabError",
    "TimeoutError",
    "UnboundLocalError",
    "UnicodeTranslateError",
    "UnicodeWarning",
    "UserWarning",
    "Warning",
)

# Operators the lackpy level allows, with their spelling for messages and the spec.
# No `**` (unbounded work from tiny literals) and no bit operators: the extended
# level adds those (EXTENDED_BINARY_OPERATORS, below).
BINARY_OPERATORS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
}
UNARY_OPERATORS = {ast.Not: "not", ast.USub: "-", ast.UAdd: "+"}
COMPARE_OPERATORS = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
BOOL_OPERATORS = {ast.And: "and", ast.Or: "or"}
FORBIDDEN_OPERATORS = {
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.Invert: "~",
}

# How rejected constructs are named in messages; any other node uses its class name.
FORBIDDEN_CONSTRUCTS = {
    "Import": "'import'",
    "ImportFrom": "'from ... import'",
    "FunctionDef": "'def' (and decorators)",
    "AsyncFunctionDef": "'async def'",
    "ClassDef": "'class' (and decorators)",
    "Return": "'return'",
    "Delete": "'del'",
    "AnnAssign": "annotated assignment",
    "TypeAlias": "'type' alias",
    "While": "'while'",
    "AsyncFor": "'async for'",
    "With": "'with'",
    "AsyncWith": "'async with'",
    "Match": "'match'",
    "Raise": "'raise'",
    "Try": "'try'",
    "TryStar": "'except*'",
    "Assert": "'assert'",
    "Global": "'global'",
    "Nonlocal": "'nonlocal'",
    "Pass": "'pass'",
    "Break": "'break'",
    "Continue": "'continue'",
    "NamedExpr": "':=' (walrus)",
    "Await": "'await'",
    "Yield": "'yield'",
    "YieldFrom": "'yield from'",
    "GeneratorExp": "generator expression",
}

# What to write instead, for constructs a model reaches for (a higher level that accepts
# the construct is named by the Checker, among the levels the policy allows).
ALTERNATIVES = {
    "While": "use for over range(...) or a tool's result",
    "FunctionDef": "use a lambda as key= or inline the code",
    "Return": "make the value the program's last expression",
    "Try": "check the value first (if ... in ..., isinstance); a tool error ends the run",
    "Raise": "end with the value or message as the last expression",
    "Assert": "use if ... : print(...)",
    "Pass": "leave out the empty branch or invert the if",
    "Break": "loop over a slice or filter with a comprehension",
    "Continue": "invert the if around the rest of the loop body",
    "GeneratorExp": "use a list comprehension [...]",
    "Import": "call a tool of the kit, or a builtin",
    "ImportFrom": "call a tool of the kit, or a builtin",
    "ClassDef": "use dicts for records",
    "With": "call a kit tool that reads or writes",
    "Global": "return values instead of rebinding outer names",
    "Nonlocal": "return values instead of rebinding outer names",
    "Yield": "build and return a list",
    "YieldFrom": "build and return a list",
    "Delete": "rebind the name, or build a new dict without the key",
    "NamedExpr": "assign on a line of its own",
    "AnnAssign": "assign without the annotation",
}

# The builtins a lackpy program may call (the extended level adds EXTENDED_BUILTINS);
# the worker builds its namespace from its level's `builtins` (LEVELS, below).
ALLOWED_BUILTINS = (
    "len",
    "sorted",
    "reversed",
    "enumerate",
    "zip",
    "range",
    "min",
    "max",
    "sum",
    "any",
    "all",
    "abs",
    "round",
    "str",
    "int",
    "float",
    "bool",
    "list",
    "dict",
    "set",
    "tuple",
    "isinstance",
    "print",
)

# What the extended level adds to the builtins and operators. The kernel jail's
# CPU and memory limits bound the work `**`, shifts or a big `pow` can make;
# no format field can look up an attribute (`str.format` is allowed there only on a
# literal whose fields name none), so strings built with chr or repr reach no sink.
EXTENDED_BUILTINS = (
    "repr",
    "map",
    "filter",
    "divmod",
    "pow",
    "chr",
    "ord",
    "hex",
    "oct",
    "bin",
    "iter",
    "next",
    "frozenset",
)
# What the python level adds. `type` is the jail's own: `type(x)` hands out no metaclass
# and `type(name, bases, namespace)` makes only what a class statement may make (it checks
# the namespace's keys when called); `super` only as `super()`, never as a value
# (CALL_ONLY). getattr, hasattr and setattr are the jail's own: they refuse, when
# called, a name that attribute_refused() denies. vars, dir, globals, eval, open ... stay out.
PYTHON_BUILTINS = (
    "id",
    "type",
    "hash",
    "bytes",
    "bytearray",
    "slice",
    "callable",
    "issubclass",
    "super",
    "object",
    "property",
    "staticmethod",
    "classmethod",
    "format",
    "ascii",
    "complex",
    "NotImplemented",
    "Ellipsis",
    "getattr",
    "hasattr",
    "setattr",
)
CALL_ONLY = frozenset({"super"})

# The dunder names a class body may define (methods, and __slots__ or `__hash__ = None`).
# Never the hooks of attribute lookup, class creation, descriptors, pickling or
# finalisation (__getattribute__, __getattr__, __setattr__, __init_subclass__,
# __set_name__, __class_getitem__, __get__, __set__, __new__, __del__, __reduce__ ...).
# Reading or writing any '__' attribute stays rejected.
DEFINABLE_DUNDERS = frozenset(
    {
        "__init__",
        "__post_init__",
        "__repr__",
        "__str__",
        "__format__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__bool__",
        "__len__",
        "__iter__",
        "__next__",
        "__reversed__",
        "__contains__",
        "__getitem__",
        "__setitem__",
        "__delitem__",
        "__missing__",
        "__call__",
        "__enter__",
        "__exit__",
        "__int__",
        "__float__",
        "__complex__",
        "__index__",
        "__round__",
        "__trunc__",
        "__floor__",
        "__ceil__",
        "__neg__",
        "__pos__",
        "__abs__",
        "__invert__",
        "__slots__",
        *(
            f"__{prefix}{op}__"
            for op in (
                "add sub mul truediv floordiv mod pow matmul divmod lshift rshift and or xor"
            ).split()
            for prefix in ("", "r", "i")
            if not (prefix == "i" and op == "divmod")
        ),
    }
)
# The '__' keys of the namespace that type(name, bases, namespace) takes: what a class
# body may bind, and its docstring.
NAMESPACE_DUNDERS = DEFINABLE_DUNDERS | {"__doc__"}

EXTENDED_BINARY_OPERATORS = {
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
}
EXTENDED_UNARY_OPERATORS = {ast.Invert: "~"}

# Names rejected wherever they appear (load, store, lambda parameter), even if
# a kit or the caller declares them: introspection, code execution, I/O, the
# character and format builtins that build dunder strings, and the modules a
# model reaches for instead of a kit tool.
FORBIDDEN_NAMES = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "input",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "copyright",
        "credits",
        "license",
        "getattr",
        "setattr",
        "delattr",
        "hasattr",
        "globals",
        "locals",
        "vars",
        "dir",
        "type",
        "object",
        "super",
        "classmethod",
        "staticmethod",
        "property",
        "id",
        "hash",
        "iter",
        "next",
        "aiter",
        "anext",
        "callable",
        "chr",
        "ord",
        "format",
        "repr",
        "ascii",
        "bytes",
        "bytearray",
        "memoryview",
        "pow",
        "map",
        "filter",
        "reduce",
        "__import__",
        "__build_class__",
        "__builtins__",
        "__loader__",
        "__spec__",
        "os",
        "sys",
        "subprocess",
        "shutil",
        "pathlib",
        "importlib",
        "builtins",
        "ctypes",
        "socket",
    }
)

# What the python level's forbidden-name message says to write instead (a module's name:
# the import-module rule's words, facades.INSTEAD); a '__' name needs none: nothing replaces it.
_CODE_INSTEAD = "the jail runs no code built at run time: write it in the program"
_NAMES_INSTEAD = "keep values built at run time in a dict, and read the names the program binds"
FORBIDDEN_INSTEAD = {
    "eval": _CODE_INSTEAD,
    "exec": _CODE_INSTEAD,
    "compile": _CODE_INSTEAD + " (re.compile: from re import compile)",
    "breakpoint": "print() the values to look at",
    "help": "the python level's spec lists what a program may use",
    "exit": "raise an exception, or let the program end",
    "quit": "raise an exception, or let the program end",
    "copyright": "leave it out",
    "credits": "leave it out",
    "license": "leave it out",
    "open": "call a tool of the kit that reads or writes files (read_file, write_file)",
    "input": "parameters instead of input()",
    "globals": _NAMES_INSTEAD,
    "locals": _NAMES_INSTEAD,
    "vars": _NAMES_INSTEAD,
    "dir": "hasattr(x, 'name'), or the spec's lists of names",
    "delattr": "del obj.name with the name spelt out",
    "memoryview": "bytes or bytearray, sliced",
    "aiter": "async is not available: iter()",
    "anext": "async is not available: next()",
}


# Attribute names denied although they do not start with "_": format field
# paths do attribute lookups in C, and these expose frames, generators,
# coroutines, code, tracebacks or the type hierarchy.
FORMAT_ATTRIBUTES = frozenset({"format", "format_map"})
INTERNAL_ATTRIBUTES = frozenset({"mro", "with_traceback"})
INTERNAL_ATTRIBUTE_PREFIXES = ("f_", "gi_", "cr_", "ag_", "tb_", "co_", "func_")


def attribute_refused(name: str) -> bool:
    """Is NAME an attribute that getattr, hasattr or setattr must refuse (the validator
    checks a literal name, the jail's own getattr every name at run time)? Stricter than
    what a program may spell: no '_' name at all (a private name can be anything), and
    none of the frame, code, generator, traceback, type or format attributes."""
    return (
        name[:1] == "_"
        or name in INTERNAL_ATTRIBUTES
        or name in FORMAT_ATTRIBUTES
        or name.startswith(INTERNAL_ATTRIBUTE_PREFIXES)
    )


class Level:
    """One language level's builtins, operators and forbidden names, as the validator,
    the jail's namespace and the spec read them."""

    __slots__ = (
        "name",
        "builtins",
        "exceptions",
        "binary",
        "unary",
        "forbidden_operators",
        "forbidden_names",
    )

    def __init__(self, name, builtins, binary, unary, exceptions=(), importable=()):
        self.name = name
        self.builtins = builtins
        self.exceptions = exceptions
        self.binary, self.unary = binary, unary
        self.forbidden_operators = {
            op: text
            for op, text in FORBIDDEN_OPERATORS.items()
            if op not in binary and op not in unary
        }
        # a facade (`import sys`) and a name it exports (`from functools import reduce`)
        # may be imported
        self.forbidden_names = FORBIDDEN_NAMES - frozenset(builtins) - frozenset(importable)


LEVELS = {
    "lackpy": Level("lackpy", ALLOWED_BUILTINS, BINARY_OPERATORS, UNARY_OPERATORS),
    "extended": Level(
        "extended",
        ALLOWED_BUILTINS + EXTENDED_BUILTINS,
        {**BINARY_OPERATORS, **EXTENDED_BINARY_OPERATORS},
        {**UNARY_OPERATORS, **EXTENDED_UNARY_OPERATORS},
        EXCEPTION_NAMES,
    ),
    "python": Level(
        "python",
        ALLOWED_BUILTINS + EXTENDED_BUILTINS + PYTHON_BUILTINS,
        {**BINARY_OPERATORS, **EXTENDED_BINARY_OPERATORS, ast.MatMult: "@"},
        {**UNARY_OPERATORS, **EXTENDED_UNARY_OPERATORS},
        EXCEPTION_NAMES + PYTHON_EXCEPTION_NAMES,
        frozenset(FACADES) | frozenset(name for names in FACADES.values() for name in names),
    ),
}
