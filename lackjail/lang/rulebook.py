"""Every rule id a program can be rejected by: what it asks, a rejected and an accepted example.

Ids are stable: reports, SARIF and `lackjail spec` use them. An example is a
program (checked by the tests, with a tool `read_file(path: str)` and a parameter `path`,
at LEVEL). Where no short program shows the rule (size caps, input types, a
failing custom rule, the validator's own failure) LEVEL is "described": the
examples say in words what is rejected and what is accepted. `param-*` examples
are `--param` values.
"""

_NEST = "x = " + "[" * 9 + "1" + "".join(f" for a{i} in [1]]" for i in range(9))
_NEST_OK = "x = " + "[" * 3 + "1" + "".join(f" for a{i} in [1]]" for i in range(3))

# id: (what the rule asks, rejected example, accepted example, level of the examples or
# "param" or "described")
RULEBOOK = {
    "input-type": (
        "a program is str or bytes",
        "a program that is neither str nor bytes, e.g. lackjail.check(42)",
        "a program given as str or bytes, e.g. lackjail.check('x = 1')",
        "described",
    ),
    "encoding": (
        "a program is UTF-8 text; encoding declarations are never honoured",
        "x = '\ud800'",
        "x = 'é'",
        "lackpy",
    ),
    "encoding-declaration": (
        "no PEP 263 encoding declaration on line 1 or 2 (any Python reading the file later "
        "would honour it, lackjail never does)",
        "# -*- coding: latin-1 -*-\nx = 1",
        "# a comment\nx = 1",
        "lackpy",
    ),
    "nul-byte": ("a program contains no NUL byte", "x = 1\x00", "x = 1", "lackpy"),
    "syntax": ("a program parses as Python 3.12", "x = (1", "x = (1)", "lackpy"),
    "limit-parse": (
        "a program is simple enough for the parser (no recursion or memory blow-up)",
        "a program the parser runs out of recursion on, e.g. x = not not ... 1 with 5,000 nots "
        "(20,005 bytes, under the size cap)",
        "x = not not 1",
        "described",
    ),
    "limit-source-bytes": (
        "a program is at most max_source_bytes bytes of UTF-8 (the policy's limits.program_bytes)",
        "a program of 65,537 bytes (the default cap is 65,536)",
        "a program of at most 65,536 bytes",
        "described",
    ),
    "limit-nodes": (
        "a program has at most max_nodes AST nodes",
        "a program of more than 20,000 AST nodes (the default cap), e.g. a list display of "
        "20,000 items",
        "a program of at most 20,000 AST nodes, e.g. a list display of 1,000 items",
        "described",
    ),
    "limit-depth": (
        "the AST nests at most max_depth levels",
        "an expression nested more than 100 levels deep (the default cap), e.g. 150 nested "
        "lists [[[...]]]",
        "an expression nested a few levels deep, e.g. x = [[[]]]",
        "described",
    ),
    "limit-comprehension-depth": (
        "comprehensions, lambdas and functions nest at most max_comprehension_depth levels",
        _NEST,
        _NEST_OK,
        "lackpy",
    ),
    "limit-literal-len": (
        "a str or bytes constant, or a list/tuple/set/dict display, has at most "
        "max_literal_len items",
        "a str constant of 32,769 characters (the default cap is 32,768)",
        "a str constant of at most 32,768 characters",
        "described",
    ),
    "limit-int-digits": (
        "an integer literal has at most max_int_digits decimal digits (by default 100; "
        "python: 4,300, CPython's own cap on int/str conversion)",
        "x = 1" + "0" * 100,
        "x = 10",
        "lackpy",
    ),
    "forbidden-node": (
        "only the level's node types appear (lackpy: no def, while, try, import, class, ...)",
        "n = 0\nwhile n < 3:\n    n += 1",
        "n = 0\nfor i in range(3):\n    n += 1",
        "lackpy",
    ),
    "forbidden-operator": (
        "no '**', '@' or bit operators (the extended level allows '**' and the bit operators)",
        "x = 2 ** 8",
        "x = 2 * 2",
        "lackpy",
    ),
    "forbidden-name": (
        "no forbidden name (eval, open, getattr, type, os, ...) appears anywhere (the "
        "extended level allows repr, map, filter, divmod, pow, chr, ord, hex, oct, bin, "
        "iter and next)",
        "x = eval('1')",
        "x = int('1')",
        "lackpy",
    ),
    "dunder-name": (
        "no name or keyword argument starts with '__' (python: `__name__` and `__debug__` "
        "are read)",
        "__x = 1",
        "x = 1",
        "lackpy",
    ),
    "non-ascii-identifier": (
        "identifiers are ASCII (Python would NFKC-normalise fullwidth letters)",
        "café = 1",
        "cafe = 1",
        "lackpy",
    ),
    "dunder-attribute": (
        "no attribute name starts with '_' (python: with '__', and '_x' only when the program "
        "gives its own objects a '_x'; super().__init__ and the other dunders a class may "
        "define are read through super())",
        "x = 'a'.__class__",
        "x = isinstance('a', str)",
        "lackpy",
    ),
    "internal-attribute": (
        "no frame, generator, coroutine, code, traceback or mro attribute",
        "x = str.mro()",
        "x = isinstance('a', str)",
        "lackpy",
    ),
    "attribute-name": (
        "getattr, hasattr and setattr name no '_' attribute and no frame, code, generator, "
        "traceback, type or format attribute (the jail refuses one built at run time too)",
        "x = getattr(1, 'f_back', None)",
        "x = getattr(1, 'real', None)",
        "python",
    ),
    "format-attribute": (
        "no attribute named 'format' or 'format_map' (format fields look up attributes; "
        "the extended level allows '.format' on a string literal whose fields name no "
        "attribute or index)",
        "x = '{}!'.format(1)",
        "x = f'{1}!'",
        "lackpy",
    ),
    "attribute-store": (
        "attributes are never assigned (python: they are)",
        "d = {}\nd.x = 1",
        "d = {}\nd['x'] = 1",
        "lackpy",
    ),
    "dunder-string": (
        "no str or bytes constant contains '__' (python: none names a dunder such as "
        "'__class__'; '__main__', other '__' and a text with whitespace are fine)",
        "x = '__import__'",
        "x = 'import'",
        "lackpy",
    ),
    "unknown-call": (
        "a called name is a tool, an allowed builtin or a parameter (extended: or a bound name)",
        "x = helper(1)",
        "x = abs(1)",
        "lackpy",
    ),
    "tool-call": (
        "a tool call fits the tool's signature: no more positional arguments than it takes, "
        "only its keyword names, every required argument, literal arguments of the declared "
        "types",
        "x = read_file(path, 'utf-8')",
        "x = read_file(path=path)",
        "lackpy",
    ),
    "undefined-name": (
        "a name is a builtin, a tool or a parameter, or something binds it before its use "
        "(a later binding counts inside the same loop, and anywhere for a function body; "
        "python: a name nothing binds raises NameError when it is reached, as in CPython, "
        "but a bundled kit's tool that the kit lacks is named before the run)",
        "x = y + 1",
        "y = 1\nx = y + 1",
        "lackpy",
    ),
    "call-target": (
        "lackpy: only names and methods of values are called",
        "x = [len][0]('a')",
        "x = len('a')",
        "lackpy",
    ),
    "rebind-builtin": (
        "an allowed builtin (or, extended, exception class) is never bound (python: it may be)",
        "len = 3",
        "n = 3",
        "lackpy",
    ),
    "rebind-tool": (
        "a tool name is never bound",
        "read_file = 1",
        "text = read_file(path)",
        "lackpy",
    ),
    "rebind-param": ("a parameter name is never bound", "path = 'x'", "p = path + 'x'", "lackpy"),
    "lambda-position": (
        "lackpy: a lambda appears only as the value of a key= argument (extended: anywhere)",
        "f = lambda s: s",
        "w = sorted(['b', 'a'], key=lambda s: s)",
        "lackpy",
    ),
    "lambda-args": (
        "lackpy: a key= lambda takes plain positional parameters only",
        "w = sorted(['b'], key=lambda s=1: s)",
        "w = sorted(['b'], key=lambda s: s)",
        "lackpy",
    ),
    "key-argument": (
        "lackpy: key= of a builtin or method call is a lambda or the name of a builtin, tool "
        "or parameter (it is called for every item)",
        "w = sorted(['b'], key=str.lower)",
        "w = sorted(['b'], key=lambda s: s.lower())",
        "lackpy",
    ),
    "kwargs-argument": (
        "a **mapping argument is passed only to dict() or a tool (it could carry key=; "
        "python: to any callable)",
        "o = {'key': len}\nw = sorted(['b'], **o)",
        "w = sorted(['b'], key=len)",
        "lackpy",
    ),
    "for-iter": (
        "lackpy: a for statement iterates over a call or a name, the data a tool or builtin "
        "made; name a literal first",
        "for x in [1, 2]:\n    print(x)",
        "items = [1, 2]\nfor x in items:\n    print(x)",
        "lackpy",
    ),
    "decorator": (
        "extended: a function has no decorators (python: it may have)",
        "@cache\ndef f(x):\n    return x",
        "def f(x):\n    return x",
        "extended",
    ),
    "except-class": (
        "extended: an except clause names builtin exception classes (or ToolError); "
        "no bare except, no BaseException (python: as in CPython, any expression and a bare "
        "except; a stop verdict outlives the handler)",
        "try:\n    x = 1\nexcept:\n    x = 2",
        "try:\n    x = 1\nexcept ValueError:\n    x = 2",
        "extended",
    ),
    "misplaced-statement": (
        "extended: return is inside a function, break and continue inside a loop",
        "return 1",
        "def f():\n    return 1",
        "extended",
    ),
    "finally-exit": (
        "extended: no return, break or continue in a finally block (it would swallow "
        "any exception; python: allowed, a stop verdict is raised again at the next line)",
        "def f():\n    try:\n        return 1\n    finally:\n        return 2",
        "def f():\n    try:\n        return 1\n    finally:\n        print('done')",
        "extended",
    ),
    "tool-attribute": (
        "a tool is called, never an attribute of it read (a pack's members are tools: fs.read)",
        "x = read_file.upper()",
        "x = read_file(path).upper()",
        "lackpy",
    ),
    "call-only": (
        "python: super is called with no arguments or two, and never stands as a value",
        "s = super\nx = 1",
        "class A:\n    def f(self):\n        return super().f()",
        "python",
    ),
    "dunder-method": (
        "python: a class defines only the dunder methods of the spec's list (no __getattr__, "
        "__getattribute__, __setattr__, __new__, __del__, __init_subclass__, ...), in a class "
        "body or as a key of type(name, bases, namespace)'s namespace",
        "class A:\n    def __getattr__(self, name):\n        return 1",
        "class A:\n    def __repr__(self):\n        return 'A'",
        "python",
    ),
    "class-keyword": (
        "python: a class statement makes no metaclass: no keywords (metaclass=), no base type",
        "class A(metaclass=abs):\n    pass",
        "class A:\n    pass",
        "python",
    ),
    "import-module": (
        "python: a standard-library module imported is one of the spec's modules, by its own "
        "name (no submodule); a module outside the standard library, or a relative import, "
        "is accepted and raises ImportError when it runs, as where it is not installed",
        "import os",
        "import json",
        "python",
    ),
    "import-name": (
        "python: `from X import` names one by one names that X's facade holds (or, from a "
        "module built into the interpreter such as sys, a name it lacks too: the ImportError "
        "is CPython's)",
        "from json import codecs",
        "from json import loads",
        "python",
    ),
    "module-attribute": (
        "python: a module's attribute is one of the names its facade holds (or a public name "
        "the real module lacks too: the AttributeError is CPython's), and is only read",
        "import json\nc = json.codecs",
        "import json\nx = json.loads('1')",
        "python",
    ),
    "param-name": (
        "a parameter name is an ASCII identifier, not '_'-led, not forbidden, no builtin or tool",
        "--param _x=1",
        "--param x=1",
        "param",
    ),
    "param-value": (
        "a parameter value is plain data (None/bool/int/float/str/bytes/list/dict, ints "
        "within 64 bits)",
        "--param n=18446744073709551616",
        "--param n=1",
        "param",
    ),
    "rule-error": (
        "a custom rule ran without raising",
        "any program, when a custom rule raises on it (or returns something that is not a message)",
        "any program every custom rule runs on without raising",
        "described",
    ),
    "internal": (
        "the validator itself did not fail (fails closed if it does)",
        "any program the validator fails on (a validator bug): it is rejected, never passed",
        "any program the validator checks without failing",
        "described",
    ),
}

# id -> what the rule asks (SARIF, the gate, `lackjail spec`).
RULES = {rule_id: entry[0] for rule_id, entry in RULEBOOK.items()}
