"""sys.stdout and sys.stderr of the python level: what a program writes to either is its output.

A run has one output stream (what `print` writes, capped by the policy): both objects
write into it, in the order the program wrote, so `print(..., file=sys.stderr)` shows up
with the rest rather than being lost. Neither is a stream of the process: no buffer, no
descriptor, no state of its own (`__slots__` is empty), and each write goes to the running
program's output, which the runner names in TARGET. The class is named as CPython's own
(`_io.TextIOWrapper`), so a program that shows `type(sys.stdout)` sees what a script sees.
"""

TARGET: list = [None]  # the running program's output (runner.Output), set by the runner


class TextIOWrapper:
    """A standard stream of the program: write(), writelines() and flush(), and the read-only
    facts a program asks a text stream (encoding, name, mode ...)."""

    __slots__ = ()
    encoding = "utf-8"
    errors = "strict"
    mode = "w"
    closed = False
    line_buffering = False

    @property
    def name(self):
        return "<stderr>" if self is STDERR else "<stdout>"

    def write(self, s, /):
        return TARGET[0].write(s)  # a str only (CPython's TypeError otherwise); its length

    def writelines(self, lines, /):
        for line in lines:
            self.write(line)

    def flush(self):
        """Nothing to do: the output goes out within moments of each write."""

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True

    def seekable(self):
        return False

    def __repr__(self):
        return f"<_io.TextIOWrapper name='{self.name}' mode='w' encoding='utf-8'>"

    def __reduce_ex__(self, protocol, /):
        raise TypeError("cannot pickle '_io.TextIOWrapper' object")


TextIOWrapper.__module__ = "_io"
STDOUT = TextIOWrapper()
STDERR = TextIOWrapper()
