"""errors: every error can carry a file, line and column; CompileError carries compiler output."""

from asp_core.errors import (AspError, BackendUnavailable, CompileError, SourceLocation,
                             SpecializationError, UnsupportedConstruct)


def test_location_is_printed_in_compiler_style():
    err = UnsupportedConstruct("while loops are not supported", SourceLocation("k.py", 12, 8),
                               construct="while")
    assert str(err) == "k.py:12:8: while loops are not supported"
    assert (err.file, err.line, err.col, err.construct) == ("k.py", 12, 8, "while")


def test_error_without_location():
    err = SpecializationError("no variant")
    assert str(err) == "no variant" and err.line is None


def test_compile_error_keeps_command_and_output():
    err = CompileError("compiling m.c failed", SourceLocation("m.c", 3, 1), command=("gcc", "m.c"),
                       output="m.c:3:1: error: expected ';'")
    text = str(err)
    assert "m.c:3:1: compiling m.c failed" in text
    assert "command: gcc m.c" in text and "expected ';'" in text


def test_hierarchy():
    for cls in (UnsupportedConstruct, SpecializationError, CompileError, BackendUnavailable):
        assert issubclass(cls, AspError)
