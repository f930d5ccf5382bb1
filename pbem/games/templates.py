"""Where the pages find a game's templates (`games/<kind>/board.html` and the rest): in the
folder its adapter names (`templates`), else in the server's `templates/games/<kind>/`. So a
game kept outside this package (a test's toy game) brings its templates along."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jinja2 import BaseLoader, Environment, FileSystemLoader, TemplateNotFound

from engine import games as engine_games

from . import rules_for


class GameTemplates(BaseLoader):
    """A Jinja loader for the games whose adapters keep their templates in a folder of their
    own; every other name is left to the next loader."""

    def _folder(self, kind: str) -> str | None:
        return rules_for(kind).templates if kind in engine_games.GAMES else None

    def get_source(self, environment: Environment, template: str
                   ) -> tuple[str, str | None, Callable[[], bool] | None]:
        top, _, rest = template.partition("/")
        kind, _, name = rest.partition("/")
        folder = self._folder(kind) if top == "games" and name else None
        if folder is None:
            raise TemplateNotFound(template)
        return FileSystemLoader(folder).get_source(environment, name)

    def list_templates(self) -> list[str]:
        return sorted(f"games/{kind}/{path.relative_to(folder).as_posix()}"
                      for kind in engine_games.GAMES
                      if (folder := self._folder(kind)) is not None
                      for path in Path(folder).rglob("*.html"))
