"""Mako templates: one lookup over the project's ``templates/`` folder (plus any a specializer adds).

Undefined names in a template are errors (``strict_undefined``), never silently empty text.
The folder is found in a checkout (``<repo>/templates``) and in an installed wheel, where it
ships as the package ``asp_core._templates``. Mako's compiled form of each template is kept in
a private folder of the disk cache, so that a new process does not compile them again (about
10 ms a template); without a usable cache they are compiled in memory.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Iterable

from mako.lookup import TemplateLookup


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
    ``module_directory`` when one is given."""

    def __init__(self, directories: Iterable[Path], module_directory: Path | None = None):
        self.directories = tuple(Path(d) for d in directories)
        self._lookup = TemplateLookup(
            directories=[str(d) for d in self.directories],
            module_directory=str(module_directory) if module_directory else None,
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


@functools.lru_cache(maxsize=None)
def _templates(extra: tuple[str, ...], cache_dir: Path | None) -> Templates:
    directories = [*(Path(e) for e in extra), project_templates_dir()]
    return Templates(directories, _module_directory(directories, cache_dir))


def _module_directory(directories: list[Path], cache_dir: Path | None) -> Path | None:
    """The cache's folder for these template folders' compiled modules (one per set of
    folders, so two checkouts do not share one), or None if the cache cannot be used."""
    from .cache import disk_cache, stable_key
    from .errors import CacheError

    try:
        return disk_cache(cache_dir).folder("mako-" + stable_key(*map(str, directories))[:16])
    except (OSError, CacheError):
        return None


def templates(extra_dirs: Iterable[str | Path] = ()) -> Templates:
    """The project's templates, with ``extra_dirs`` (a specializer's own) searched first."""
    from .config import current

    return _templates(tuple(str(Path(d).resolve()) for d in extra_dirs), current().cache_dir)


def render(template: str, /, **context: Any) -> str:
    """Render one of the project's templates."""
    return templates().render(template, **context)


def clear_cache() -> None:
    _templates.cache_clear()
