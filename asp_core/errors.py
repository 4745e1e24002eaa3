"""Errors raised by the core and by specializers, each able to point at a place in a file.

``UnsupportedConstruct`` means user code lies outside what a specializer accepts (the code then
runs as plain Python, or raises in strict mode); ``SpecializationError`` is what strict mode
raises instead of falling back; ``CompileError`` carries the compiler's command and output;
``BackendUnavailable`` says a compiler, library or device is missing, which is a reason to pick
another variant, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    """A place in a source file: 1-based line, 0-based column (as Python's ``ast`` counts)."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class AspError(Exception):
    """Base of all errors of this project; ``location`` may be None."""

    def __init__(self, message: str, location: SourceLocation | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

    @property
    def file(self) -> str | None:
        return self.location.file if self.location else None

    @property
    def line(self) -> int | None:
        return self.location.line if self.location else None

    @property
    def col(self) -> int | None:
        return self.location.col if self.location else None

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class UnsupportedConstruct(AspError):
    """User code uses something the specializer does not accept (``construct`` names it)."""

    def __init__(self, message: str, location: SourceLocation | None = None, construct: str = ""):
        super().__init__(message, location)
        self.construct = construct


class SpecializationError(AspError):
    """Specialization failed where the caller asked not to fall back (``strict=True``)."""


class CompileError(AspError):
    """A compiler rejected generated source; ``output`` is what it printed."""

    def __init__(self, message: str, location: SourceLocation | None = None, *,
                 command: tuple[str, ...] = (), output: str = ""):
        super().__init__(message, location)
        self.command = tuple(command)
        self.output = output

    def __str__(self) -> str:
        text = super().__str__()
        if self.command:
            text += "\ncommand: " + " ".join(self.command)
        if self.output:
            text += "\ncompiler output:\n" + self.output.rstrip()
        return text


class UnsupportedArgument(AspError):
    """A call passes a value a variant cannot take (a list where an array is needed, an object
    array, a partially indexed array): a reason to run another variant or plain Python."""


class BackendUnavailable(AspError):
    """A compiler, library (pycuda, OpenMP) or device this variant needs is not present."""


class CacheError(AspError):
    """The on-disk cache is unsafe to use (not private, entries owned by someone else)."""


class UnsafePath(AspError):
    """A folder or file the project was asked to write is unsafe: a symbolic link, not a
    folder, or owned by another user (``ASP_DUMP_DIR``)."""
