"""Every fenced code block of README.md runs, and what it shows is what it does.

Conventions for the README's code blocks (each fence names its language; any other language,
or none, fails ``test_every_block_is_run_or_listed``):

* ```` ```python ````: run in this process, as a module of its own: the block is written to a
  file (padded with blank lines, so line numbers in tracebacks and messages are the README's)
  and executed in a fresh namespace, with the repository root as the working directory and
  the suite's private ``ASP_CACHE_DIR`` (``conftest.py``). A block preceded by the line
  ``<!-- continues -->`` runs in the namespace of the python block before it instead (the
  chain is one test, named after its first block's line). The environment and the working
  directory are restored after each chain, and ``tempfile`` makes its files in the test's own
  temporary folder meanwhile.

  - ``FallbackWarning`` is an error: a block that claims compiled code ran cannot pass when it
    silently ran plain Python. Blocks that show a fallback catch the warning themselves
    (``warnings.catch_warnings``), and kernels whose variant is shown run with ``strict=True``.
  - A top-level expression statement ending in the comment ``# -> TEXT`` is checked: the
    ``repr`` of its value must be ``TEXT``, where ``...`` matches any text (doctest's
    ELLIPSIS). Everything else a block claims is written as ``assert`` statements in it.

* ```` ```sh ````: each line is one command (blank lines and ``#`` comments are skipped; a
  trailing ``# comment`` is dropped), run through ``subprocess`` from the repository root
  with this Python: leading ``NAME=VALUE`` words set environment variables, a leading ``asp``
  becomes ``sys.executable -m asp_core`` and ``python``/``python3`` becomes
  ``sys.executable``. The sh commands share one private cache folder of their own, and each
  must exit with status 0. Commands that cannot run inside the test suite are listed in
  ``NOT_RUN`` with the reason; a listed command that is no longer in the README fails too.

* ```` ```text ````: not run. A text block preceded by the line ``<!-- output -->`` is the
  output of the code block just before it, and is checked against what that block printed
  (its standard output; doctest's ELLIPSIS, so ``...`` stands for text that varies, and
  NORMALIZE_WHITESPACE). Other text blocks (the layout tree) are exempt.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import io
import os
import re
import shlex
import subprocess
import sys
import tempfile
import tokenize
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from asp_core.specializer import FallbackWarning

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: sh commands that the suite does not run, and why.
NOT_RUN = {
    "python3 run.py main": "the main job at full size takes minutes; tests/examples/test_main.py "
                           "runs the same job (examples.__main__) in its --quick form",
    "python3 run.py test": "runs this test suite, which would run itself recursively",
}
#: Time limit of one sh command (seconds).
COMMAND_TIMEOUT_S = 120

LANGUAGES = ("python", "sh", "text")
CONTINUES = "<!-- continues -->"
OUTPUT = "<!-- output -->"
CHECKER = doctest.OutputChecker()
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass
class Block:
    language: str
    line: int          # README line of the first line of code (after the opening fence)
    code: str
    marker: str        # the non-blank line before the opening fence ("" if none)
    output: "Block | None" = None   # the text block that shows this block's output
    followers: list = field(default_factory=list)  # python blocks that continue this one


def readme_blocks() -> list[Block]:
    """The fenced blocks of the README, in order (fences may be indented in list items)."""
    lines = README.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = re.match(r"^(\s*)```(.*)$", lines[i])
        if opening is None:
            i += 1
            continue
        indent, language = opening.group(1), opening.group(2).strip()
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        body, j = [], i + 1
        while not re.match(r"^\s*```\s*$", lines[j]):
            text = lines[j]
            body.append(text[len(indent):] if text.startswith(indent) else text.lstrip())
            j += 1
        blocks.append(Block(language, i + 2, "\n".join(body) + "\n", previous))
        i = j + 1
    return blocks


def chains(blocks: list[Block]) -> list[Block]:
    """The python blocks that start a chain (their ``followers`` continue them), with each
    block's ``output`` text block attached."""
    starts, last_python, last_code = [], None, None
    for block in blocks:
        if block.language == "text" and block.marker == OUTPUT:
            assert last_code is not None and last_code.output is None, \
                f"README line {block.line}: {OUTPUT} follows no code block"
            last_code.output = block
        if block.language in ("python", "sh"):
            last_code = block
        if block.language != "python":
            continue
        if block.marker == CONTINUES:
            assert last_python is not None, f"README line {block.line}: continues nothing"
            (starts[-1]).followers.append(block)
        else:
            starts.append(block)
        last_python = block
    return starts


BLOCKS = readme_blocks()
PYTHON_CHAINS = chains(BLOCKS)
SH_BLOCKS = [b for b in BLOCKS if b.language == "sh"]


def commands(block: Block) -> list[str]:
    """The commands of an sh block, one a line, without comments."""
    found = []
    for line in block.code.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            found.append(" ".join(shlex.quote(w) for w in words))
    return found


# -- python blocks ---------------------------------------------------------------------------


def _comments(source: str) -> dict[int, str]:
    """Line -> the comment on it."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string
    return found


def _check(value, expected: str, line: int) -> None:
    got = repr(value)
    if not CHECKER.check_output(expected + "\n", got + "\n", doctest.ELLIPSIS):
        raise AssertionError(f"README line {line}: the value is {got}, the README shows "
                             f"{expected}")


def compiled_block(block: Block, path: Path) -> types.CodeType:
    """The block as code, ``# -> TEXT`` lines turned into checks."""
    source = "\n" * (block.line - 1) + block.code
    path.write_text(source)
    tree = ast.parse(source, str(path))
    comments = _comments(source)
    body = []
    for stmt in tree.body:
        comment = comments.get(stmt.end_lineno, "")
        if isinstance(stmt, ast.Expr) and comment.startswith("# ->"):
            expected = comment[len("# ->"):].strip()
            call = ast.Call(ast.Name("__readme_check__", ast.Load()),
                            [stmt.value, ast.Constant(expected), ast.Constant(stmt.end_lineno)],
                            [])
            stmt = ast.copy_location(ast.Expr(ast.copy_location(call, stmt.value)), stmt)
        elif "# ->" in comment:
            raise AssertionError(f"README line {stmt.end_lineno}: '# ->' only checks a "
                                 "top-level expression statement")
        body.append(stmt)
    tree.body = body
    return compile(ast.fix_missing_locations(tree), str(path), "exec")


def check_output(block: Block, printed: str) -> None:
    if block.output is None:
        return
    want = block.output.code
    if not CHECKER.check_output(want, printed, FLAGS):
        difference = CHECKER.output_difference(doctest.Example("", want), printed, FLAGS)
        raise AssertionError(f"README line {block.output.line}: the output shown differs from "
                             f"what the block at line {block.line} printed:\n{difference}")


@contextlib.contextmanager
def restored_state(tmp_path: Path):
    """The environment, working directory and temporary folder as they were; meanwhile
    ``tempfile`` makes its files under ``tmp_path``."""
    environ, cwd, tempdir = dict(os.environ), os.getcwd(), tempfile.tempdir
    tempfile.tempdir = str(tmp_path)
    try:
        yield
    finally:
        tempfile.tempdir = tempdir
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)


@pytest.mark.parametrize("start", PYTHON_CHAINS, ids=lambda b: f"README.md:{b.line}")
def test_python_block(start: Block, tmp_path):
    name = f"readme_line_{start.line}"
    module = types.ModuleType(name)
    module.__dict__["__readme_check__"] = _check
    sys.modules[name] = module
    try:
        with restored_state(tmp_path), warnings.catch_warnings():
            warnings.simplefilter("error", FallbackWarning)
            os.chdir(ROOT)
            for block in [start] + start.followers:
                path = tmp_path / f"README_md_line_{block.line}.py"
                module.__file__ = str(path)
                code = compiled_block(block, path)
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    exec(code, module.__dict__)
                check_output(block, printed.getvalue())
    finally:
        del sys.modules[name]


# -- sh blocks -------------------------------------------------------------------------------


def argv_of(command: str) -> tuple[dict[str, str], list[str]]:
    """The environment settings and the argument vector of a README command."""
    words = shlex.split(command)
    env = {}
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if words[0] == "asp":
        words[:1] = [sys.executable, "-m", "asp_core"]
    elif words[0] in ("python", "python3"):
        words[0] = sys.executable
    return env, words


@pytest.fixture(scope="module")
def sh_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("readme-sh-cache"))


@pytest.mark.parametrize("block", SH_BLOCKS, ids=lambda b: f"README.md:{b.line}")
def test_sh_block(block: Block, sh_cache):
    printed = []
    for command in commands(block):
        if command in NOT_RUN:
            continue
        settings, argv = argv_of(command)
        env = {**os.environ, "ASP_CACHE_DIR": sh_cache, "ASP_CALIBRATE": "0", **settings}
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S)
        assert proc.returncode == 0, \
            f"README line {block.line}: {command!r} exited {proc.returncode}:\n" \
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        printed.append(proc.stdout)
    check_output(block, "".join(printed))


# -- coverage ------------------------------------------------------------------------------


def test_every_block_is_run_or_listed():
    """Each block has a language the tests know; each sh command runs or is listed."""
    for block in BLOCKS:
        assert block.language in LANGUAGES, \
            f"README line {block.line}: a block in {block.language or 'no language'!r}; " \
            f"tag it {', '.join(LANGUAGES)} (see this module's docstring)"
        assert block.marker != CONTINUES or block.language == "python", \
            f"README line {block.line}: {CONTINUES} before a {block.language} block"
    in_readme = {c for b in SH_BLOCKS for c in commands(b)}
    assert not set(NOT_RUN) - in_readme, f"listed but not in the README: {set(NOT_RUN) - in_readme}"
    for command in in_readme - set(NOT_RUN):
        settings, argv = argv_of(command)
        assert argv[0] == sys.executable, \
            f"{command!r}: runs neither asp nor python; list it in NOT_RUN with the reason"


def test_the_conventions_hold_on_a_sample(tmp_path):
    """The harness itself: a '# ->' line that does not match fails, '...' matches."""
    block = Block("python", 3, "x = [1, 2, 3]\nx  # -> [1, ...]\nlen(x)  # -> 4\n", "")
    code = compiled_block(block, tmp_path / "sample.py")
    namespace = {"__readme_check__": _check}
    with pytest.raises(AssertionError, match="README line 5: the value is 3"):
        exec(code, namespace)
    shown = Block("text", 9, "a\n...\nz\n", OUTPUT)
    check_output(Block("python", 1, "", "", output=shown), "a\nb\nc\nz\n")
    with pytest.raises(AssertionError, match="README line 9"):
        check_output(Block("python", 1, "", "", output=shown), "a\nz\nq\n")
