"""Mako templates: one lookup over the project's ``templates/`` folder (plus any a specializer adds).

Undefined names in a template are errors (``strict_undefined``), never silently empty text.
The folder is found in a checkout (``<repo>/templates``) and in an installed wheel, where it
ships as the package ``asp_core._templates``.
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
    """A Mako lookup over several folders, searched in order."""

    def __init__(self, directories: Iterable[Path]):
        self.directories = tuple(Path(d) for d in directories)
        self._lookup = TemplateLookup(
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


@functools.lru_cache(maxsize=None)
def _templates(extra: tuple[str, ...]) -> Templates:
    return Templates([*(Path(e) for e in extra), project_templates_dir()])


def templates(extra_dirs: Iterable[str | Path] = ()) -> Templates:
    """The project's templates, with ``extra_dirs`` (a specializer's own) searched first."""
    return _templates(tuple(str(Path(d).resolve()) for d in extra_dirs))


def render(template: str, /, **context: Any) -> str:
    """Render one of the project's templates."""
    return templates().render(template, **context)


def clear_cache() -> None:
    _templates.cache_clear()
