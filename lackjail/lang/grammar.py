"""The lackpy language as data: allowed nodes and operators, builtins, forbidden names, rule ids.

Everything here is an allowlist or a named denial; the validator and the spec
both read these tables, so the language is defined in exactly one place.
"""

import ast

# The language levels, strictest first; `lackpy` is the default.
LANGUAGES = ("lackpy",)
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

# Allowed operators, with their spelling for messages and the spec. No `**`
# (unbounded work from tiny literals) and no bit operators.
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
    "TryStar": "'try'",
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

# The builtins a program may call; the worker builds its namespace from this tuple.
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

# Attribute names denied although they do not start with "_": format field
# paths do attribute lookups in C, and these expose frames, generators,
# coroutines, code, tracebacks or the type hierarchy.
FORMAT_ATTRIBUTES = frozenset({"format", "format_map"})
INTERNAL_ATTRIBUTES = frozenset({"mro"})
INTERNAL_ATTRIBUTE_PREFIXES = ("f_", "gi_", "cr_", "ag_", "tb_", "co_", "func_")

# Every rule id the validator reports, with the one-line description the spec publishes.
RULES = {
    "input-type": "a program is str or bytes",
    "encoding": "a program is UTF-8 text; encoding declarations are never honoured",
    "nul-byte": "a program contains no NUL byte",
    "syntax": "a program parses as Python 3.12",
    "limit-parse": "a program is simple enough for the parser (no recursion or memory blow-up)",
    "limit-source-bytes": "a program is at most max_source_bytes bytes of UTF-8",
    "limit-nodes": "a program has at most max_nodes AST nodes",
    "limit-depth": "the AST nests at most max_depth levels",
    "limit-comprehension-depth": "comprehensions and lambdas nest at most max_comprehension_depth levels",
    "limit-literal-len": "a string or bytes constant, or a list/tuple/set/dict display, has at most max_literal_len items",
    "limit-int-digits": "an integer literal has at most max_int_digits decimal digits",
    "forbidden-node": "only the allowed node types appear (no import, def, class, while, try, with, ...)",
    "forbidden-operator": "no '**', '@' or bit operators",
    "forbidden-name": "no forbidden name appears anywhere",
    "dunder-name": "no name or keyword argument starts with '__'",
    "non-ascii-identifier": "identifiers are ASCII (Python would NFKC-normalise fullwidth letters)",
    "dunder-attribute": "no attribute name starts with '_'",
    "internal-attribute": "no frame, generator, coroutine, code, traceback or mro attribute",
    "format-attribute": "no attribute named 'format' or 'format_map' (use f-strings)",
    "attribute-store": "attributes are never assigned",
    "dunder-string": "no str or bytes constant contains '__'",
    "unknown-call": "a called name is a tool, an allowed builtin or a parameter",
    "call-target": "only names and methods of values are called",
    "rebind-builtin": "an allowed builtin is never bound (assignment, for, comprehension, lambda parameter)",
    "rebind-tool": "a tool name is never bound",
    "rebind-param": "a parameter name is never bound",
    "lambda-position": "a lambda appears only as the value of a key= argument",
    "lambda-args": "a key= lambda takes plain positional parameters only",
    "key-argument": "key= of a builtin or method call is a lambda or the name of a builtin, tool or parameter",
    "kwargs-argument": "a **mapping argument is passed only to dict() or a tool (it could carry key=)",
    "for-iter": "a for statement iterates over a call or a name",
    "param-name": "a parameter name is an ASCII identifier, not '_'-led, forbidden, a builtin or a tool",
    "param-value": "a parameter value is plain data (None/bool/int/float/str/bytes/list/dict)",
    "rule-error": "a custom rule ran without raising",
    "internal": "the validator itself did not fail (fails closed if it does)",
}
