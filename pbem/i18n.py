"""The server's words in the reader's language: Flask-Babel, set up for English only for now.

Every sentence a page or a mail shows goes through `gettext` / `ngettext` (in templates the same
names, new-style: `ngettext("%(num)d card", "%(num)d cards", n)`), so plural forms follow the
language's plural rules from its catalog and never a hand-made `'s' if n != 1`. Catalogs live in
`pbem/translations/<lang>/LC_MESSAGES/messages.po`; `babel.cfg` tells `pybabel extract` where
the words are. English is the source language and needs no catalog. The engine's own sentences
(the log, the scoring lines) are English and use `engine.words`.
"""

from __future__ import annotations

from flask import Flask
from flask_babel import Babel

babel = Babel()

LANGUAGES = ("en",)


def _locale() -> str:
    return "en"  # one language until the catalogs exist; then the seat's or the browser's


def init_app(app: Flask) -> None:
    app.config.setdefault("BABEL_DEFAULT_LOCALE", "en")
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", "translations")
    babel.init_app(app, locale_selector=_locale)
