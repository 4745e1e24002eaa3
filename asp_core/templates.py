"""Mako templates: one lookup over the project's ``templates/`` folder (plus any a specializer adds).

Undefined names in a template are errors (``strict_undefined``), never silently empty text.
The folder is found in a checkout (``<repo>/templates``) and in an installed wheel, where it
ships as the package ``asp_core._templates``.

Mako's compiled form of each template (a Python module) is kept in the disk cache as an entry
like any compiled variant, keyed by the template's path and text, Mako's version and the
lookup's options, so that a new process does not compile it again (about 10 ms a template).
It gets the same checks as a compiled variant: the entry must be ours and private, and the
module's bytes are checked against the entry's manifest before they run, so a file planted in
the cache is never executed. Mako's own ``module_directory``, which imports whatever ``.py``
file it finds there, is not used. When the cache cannot be used, or holds a module that does
not load, the template is compiled in memory (with the reason in the log): rendering never
fails because of the cache.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import types
from pathlib import Path
from typing import Any, Iterable

import mako
from mako import codegen
from mako.lookup import TemplateLookup
from mako.template import ModuleTemplate, Template

log = logging.getLogger("asp.templates")

MODULE = "template.py"


def project_templates_dir() -> Path:
    """The folder holding the project's own templates."""
    here = Path(__file__).resolve().parent
    installed = here / "_templates"
    if installed.is_dir():
        return installed
    checkout = here.parent / "templates"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"no templates folder next to {here} (looked for {installed} and {checkout})")


class Templates:
    """A Mako lookup over several folders, searched in order; compiled templates are kept in
    the disk cache at ``cache_dir`` (the user cache folder if None)."""

    def __init__(self, directories: Iterable[Path], cache_dir: Path | None = None):
        self.directories = tuple(Path(d) for d in directories)
        self._lookup = _CachedLookup(
            cache_dir,
            directories=[str(d) for d in self.directories],
            strict_undefined=True,
            input_encoding="utf-8",
        )

    def render(self, template: str, /, **context: Any) -> str:
        """Render ``template`` (a path relative to one of the folders) with ``context``."""
        return self._lookup.get_template(template).render(**context)

    def names(self) -> list[str]:
        """All templates (``*.mako``) reachable through this lookup, as relative paths."""
        found = set()
        for directory in self.directories:
            for path in directory.rglob("*.mako"):
                found.add(path.relative_to(directory).as_posix())
        return sorted(found)


class _CachedLookup(TemplateLookup):
    """A ``TemplateLookup`` that keeps compiled templates as verified disk-cache entries."""

    def __init__(self, cache_dir: Path | None, **options: Any):
        super().__init__(**options)
        self._cache_dir = cache_dir

    def _load(self, filename: str, uri: str) -> Template:
        with self._mutex:
            found = self._collection.get(uri)
            if found is not None:  # another thread loaded it meanwhile
                return found
            template = self._from_cache(filename, uri)
            if template is None:  # compiled in memory (Mako's default without a folder)
                template = Template(uri=uri, filename=filename, lookup=self,
                                    **self.template_args)
            self._collection[uri] = template
            return template

    def _from_cache(self, filename: str, uri: str) -> Template | None:
        """The template compiled from the cache entry of its current text, or None (and the
        reason logged) when the cache cannot give one."""
        from .cache import disk_cache, stable_key, verified_bytes
        from .errors import CacheError

        mtime = os.stat(filename).st_mtime  # before reading: a later change is seen
        with open(filename, "rb") as f:
            text = f.read()
        options = {k: repr(v) for k, v in sorted(self.template_args.items())}
        key = stable_key("mako-module", mako.__version__, codegen.MAGIC_NUMBER, uri, filename,
                         text, options)

        def build(folder: Path) -> None:
            compiled = Template(text.decode("utf-8"), uri=uri, filename=filename, lookup=self,
                                **self.template_args)
            (folder / MODULE).write_text(compiled.code, encoding="utf-8")

        cache = disk_cache(self._cache_dir)
        try:
            entry = cache.entry(key, build, f"the compiled template {uri}")
            data = verified_bytes(entry, MODULE)
        except CacheError as exc:
            log.info("compiling template %s in memory: %s", uri, exc)
            return None
        module, source = _module_from_bytes(uri, data)
        if module is None:  # verified, yet not a whole module Mako made: make it again
            log.warning("compiling template %s in memory: the cached module %s is not a "
                        "whole compiled template; rebuilding it", uri, entry / MODULE)
            try:
                cache.replace(key, build)
            except CacheError as exc:
                log.info("cannot rebuild %s: %s", entry, exc)
            return None
        module._modified_time = mtime  # compiled from the text as of that time
        return ModuleTemplate(module, template_filename=filename, module_source=source,
                              lookup=self)


class _SourceLoader:
    """Gives a template module's source to ``linecache`` (for tracebacks)."""

    def __init__(self, source: str):
        self._source = source

    def get_source(self, name: str) -> str:
        return self._source


def _module_from_bytes(uri: str, data: bytes) -> tuple[types.ModuleType | None, str]:
    """Execute a compiled template module and return it with its source; None for the module
    if it is not a whole module of this Mako version for ``uri`` (a truncated file whose
    manifest was rewritten, say)."""
    module_id = re.sub(r"\W", "_", uri)
    try:
        source = data.decode("utf-8")
        if not source.rstrip().endswith("__M_END_METADATA\n\"\"\""):  # Mako's last line
            return None, ""
        code = compile(source, module_id, "exec")
    except (SyntaxError, ValueError):  # UnicodeDecodeError is a ValueError
        return None, ""
    module = types.ModuleType(module_id)
    module.__loader__ = _SourceLoader(source)
    exec(code, module.__dict__)
    if (getattr(module, "_magic_number", None) != codegen.MAGIC_NUMBER
            or getattr(module, "_template_uri", None) != uri
            or not callable(getattr(module, "render_body", None))):
        return None, ""
    return module, source


@functools.lru_cache(maxsize=None)
def _templates(extra: tuple[str, ...], cache_dir: Path | None) -> Templates:
    directories = [*(Path(e) for e in extra), project_templates_dir()]
    return Templates(directories, cache_dir)


def templates(extra_dirs: Iterable[str | Path] = ()) -> Templates:
    """The project's templates, with ``extra_dirs`` (a specializer's own) searched first."""
    from .config import current

    return _templates(tuple(str(Path(d).resolve()) for d in extra_dirs), current().cache_dir)


def render(template: str, /, **context: Any) -> str:
    """Render one of the project's templates."""
    return templates().render(template, **context)


def clear_cache() -> None:
    """Forget the lookups (and the templates they loaded); the next render loads them again."""
    _templates.cache_clear()
