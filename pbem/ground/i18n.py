"""The server's words in the reader's language: English, German and Spanish, with Flask-Babel.

Every sentence a page or a mail shows goes through `gettext` / `ngettext` (in templates the same
names, new-style: `ngettext("%(num)d card", "%(num)d cards", n)`), so plural forms follow the
language's plural rules from its catalog and never a hand-made `'s' if n != 1`. English is the
source language and needs no catalog; German and Spanish have theirs in
`pbem/translations/<lang>/LC_MESSAGES/messages.po`, and `babel.cfg` tells `pybabel extract`
where the words are (the commands are in docs/translations.md).

Who reads what: a seat's page and every mail to a seat are in the seat's `language` (chosen with
`use(...)` or `force_locale(...)`); any other page (admin pages, the home page) in the language
the browser prefers; otherwise the game's default, `[games] language`.

The catalogs are compiled here, not committed: `init_app` writes each `.po` source's `.mo` into
the instance folder (`instance/translations/`) when it is missing or older than its source, the
same way on a fresh clone, an editable install and a server, and a process that cannot write
there compiles into a temporary folder of its own. Compiling both catalogs takes milliseconds.

A computer seat keeps the name it was given; the name the server gives one when none is
(`Computer (strong)`) is shown in the reader's words ("Computer (stark)", "Ordenador
(fuerte)") by `shown_name`, which every template expression and every sentence's variables go
through, so no page or mail has to remember it.

Python code imports `gettext` / `ngettext` from here, not from Flask-Babel: they behave the
same (the locale selector, `use`, `force_locale` and `refresh` included) but look the catalog
up once per application context and locale instead of on every call. Flask-Babel's own
functions walk the context, domain and locale again for each sentence (some 25 microseconds a
call, dozens of calls a move); these take about 2. Templates get the same.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from babel import Locale
from babel.dates import format_date, format_time
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import NullTranslations
from flask import Flask, current_app, g, has_request_context, request
from flask.globals import _cv_app  # the app context itself (see translations)
from flask_babel import (
    Babel,
    LazyString,
    force_locale,
    get_domain,
    get_locale,
    get_translations,
    refresh,
)
from jinja2 import pass_context
from markupsafe import Markup, escape

from engine.words import Phrase, PlayerWord

from . import clock

babel = Babel()

LANGUAGES = ("en", "de", "es")
"""The languages a seat may read, English first (the source language)."""

LANGUAGE_NAMES = {"en": "English", "de": "Deutsch", "es": "Español"}
"""Each language in its own words, for the switch on the pages and the admin form."""

SOURCES = Path(__file__).resolve().parents[1] / "translations"


_NULL = NullTranslations()


def translations():
    """The catalog of the current context's locale (a null one outside any app context).

    Kept in Flask-Babel's per-context namespace under `babel_translations`, the name its
    `force_locale` and `refresh` (and so `use`) clear and restore, so a changed locale is seen
    at once."""
    try:
        # The app context itself, not through the `g` proxy: a mail looks up dozens of
        # sentences, and the proxy's lookup took six times the catalog's.
        context = _cv_app.get()
    except LookupError:  # outside any app context, as Flask-Babel does
        return _NULL
    try:
        cached = context.g._flask_babel.babel_translations
    except AttributeError:  # a context's first lookup (or its catalog cleared by refresh)
        cached = None
    if cached is None:
        cached = get_translations()
        context.g._flask_babel.babel_translations = cached  # get_translations made the namespace
    return cached


def gettext(string: str, **variables) -> str:
    """`string` in the current locale, with `variables` put in (`%(name)s`)."""
    translated = translations().ugettext(string)
    return translated % _shown(variables) if variables else translated


def ngettext(singular: str, plural: str, num: int, **variables) -> str:
    """The form of `singular`/`plural` for `num` in the current locale (`%(num)d` is `num`)."""
    variables.setdefault("num", num)
    return translations().ungettext(singular, plural, num) % _shown(variables)


def pgettext(context: str, string: str, **variables) -> str:
    """`gettext` of `string` in the message context `context`."""
    translated = translations().upgettext(context, string)
    return translated % _shown(variables) if variables else translated


def npgettext(context: str, singular: str, plural: str, num: int, **variables) -> str:
    """`ngettext` in the message context `context`."""
    variables.setdefault("num", num)
    return translations().unpgettext(context, singular, plural, num) % _shown(variables)


_ = gettext


def N_(message: str) -> str:
    """Marks a message for extraction where it is defined; it is translated where it is shown."""
    return message


COLOURS = {name: name for name in (
    N_("yellow"), N_("red"), N_("green"), N_("purple"), N_("blue"), N_("cream"), N_("orange"),
    N_("white"), N_("black"), N_("grey"), N_("brown"), N_("pink"))}
"""The colours of players and cards, as the engine names them (the key), in the reader's words."""

STATUSES = {"running": N_("running"), "paused": N_("paused"), "finished": N_("finished"),
            "aborted": N_("aborted")}
ACTORS = {"player": N_("player"), "timeout": N_("timeout"), "bot": N_("computer player"),
          "admin": N_("organiser")}


def colour(name: str) -> str:
    """A player's or a card's colour in the reader's language ('red' -> 'rot', 'rojo')."""
    return gettext(COLOURS[name]) if name in COLOURS else name


def lazy_colour(name: str) -> LazyString:
    """`colour(name)` when shown (for a message composed before its reader is known)."""
    return LazyString(colour, name)


BOT_LEVELS = {"random": N_("random"), "greedy": N_("greedy"), "strong": N_("strong")}
"""The computer players as the engines name them (the key), in the reader's words."""

def given_bot_name(level: str) -> str:
    """The name a computer seat gets when it is given none (stored; shown by `shown_name`)."""
    return f"Computer ({level})"


_BOT_NAMES = {given_bot_name(level): level for level in BOT_LEVELS}


def bot_word(level: str) -> str:
    """A computer player's level in the reader's words ('strong' -> 'stark', 'fuerte')."""
    return gettext(BOT_LEVELS[level]) if level in BOT_LEVELS else level


def name_data(name: str):
    """A seat's name as sentence data: a computer seat's given name (`Computer (strong)`) in
    each reader's words, any other name as it is."""
    if name in _BOT_NAMES:
        return {"t": "Computer (%(bot)s)", "p": {"bot": {"t": BOT_LEVELS[_BOT_NAMES[name]]}}}
    return name


NAMED = (N_("%(name)s (%(colour)s)"), N_("%(name)s (you, %(colour)s)"))
"""How `phrase_data` names a player; `unnamed` undoes it."""


def unnamed(data):
    """Sentence data with its players named by colour alone, as the engine names them (to
    compare a stored line with one the engine writes now)."""
    if isinstance(data, list):
        return [unnamed(v) for v in data]
    if not isinstance(data, dict):
        return data
    if data.get("t") in NAMED:
        return data["p"]["colour"]
    return {**data, "p": {k: unnamed(v) for k, v in data.get("p", {}).items()}}


def shown_name(value):
    """A name as the reader sees it: a computer seat's given name (`Computer (strong)`) in the
    reader's words, anything else as it is. Every template expression goes through it (the
    Jinja environment's `finalize`) and every sentence's variables."""
    if type(value) is str and value in _BOT_NAMES:
        level = _BOT_NAMES[value]
        return gettext("Computer (%(bot)s)", bot=bot_word(level))
    return value


def _shown(variables: dict) -> dict:
    for value in variables.values():
        if type(value) is str and value in _BOT_NAMES:
            return {name: shown_name(value) for name, value in variables.items()}
    return variables


def status_word(status: str) -> str:
    return gettext(STATUSES[status]) if status in STATUSES else status


def actor_word(actor: str) -> str:
    return gettext(ACTORS[actor]) if actor in ACTORS else actor


def phrase_data(line, names: dict[str, str] | None = None, you: str | None = None):
    """An engine sentence as language-neutral data for the database: its message id, its
    parameters (themselves data) and its count; a plain string stays a string.

    With `names` (a player's colour: their name), a player the sentence names by colour is
    written as name and colour ("Chiara (green)"), and the reader's own colour `you` as
    "Chiara (you, green)"; the names are those of the moment, as a move's log keeps them."""
    if isinstance(line, PlayerWord) and names and str(line) in names:
        mine = str(line) == you
        return {"t": NAMED[1] if mine else NAMED[0],
                "p": {"name": name_data(names[str(line)]), "colour": {"t": str(line), "p": {}}}}
    if isinstance(line, Phrase):
        if isinstance(line.key, str) and "(you)" in line.key:
            you = None  # the sentence says "(you)" itself
        data: dict[str, Any] = {
            "t": list(line.key) if isinstance(line.key, tuple) else line.key,
            "p": {name: [phrase_data(v, names, you) for v in value]
                  if isinstance(value, (list, tuple))
                  else phrase_data(value, names, you) for name, value in line.params.items()}}
        if line.n is not None:
            data["n"] = line.n
        return data
    return line


def render(data) -> str:
    """Stored sentence data (or a Phrase, or a plain string) in the reader's language."""
    if isinstance(data, Phrase):
        data = phrase_data(data)
    if not isinstance(data, dict):
        return data if isinstance(data, str) else str(data)
    return _render(data, translations())


def _render(data: dict, catalog) -> str:
    """`render` of sentence data with the catalog looked up once for the whole sentence (a
    line of the log has half a dozen parts, each a message)."""
    params = {name: _parameter(value, catalog) for name, value in data.get("p", {}).items()}
    key = data["t"]
    if isinstance(key, list):
        params.setdefault("num", data["n"])
        return catalog.ungettext(key[0], key[1], data["n"]) % params
    translated = catalog.ugettext(key)
    return translated % params if params else translated


def _parameter(value, catalog):
    """A sentence's parameter as it is put in: a list (of cards, say) joined by commas, as the
    engine's English joins it."""
    if isinstance(value, (list, tuple)):
        return ", ".join(_parameter(v, catalog) for v in value)
    if isinstance(value, dict):
        return _render(value, catalog)
    return value


class Sentence(LazyString):
    """Stored sentence data, written (`render`) only when shown: in the language of the mail or
    page it is shown in. `data` is what it was made from."""

    def __init__(self, data) -> None:
        super().__init__(render, data)
        self.data = data


def lazy(data) -> Sentence:
    return Sentence(data)


def digest_lines(text: str) -> list[str]:
    """A digest item's stored lines (a JSON list of sentence data; older ones plain text)."""
    try:
        stored = json.loads(text)
    except ValueError:
        return text.split("\n")
    return [render(line) for line in stored] if isinstance(stored, list) else [text]


def deadline_tag(moment: datetime, tz: str | None) -> Markup:
    """A `<time>` element with the moment in the reader's words, for a page."""
    return Markup('<time datetime="{}">{}</time>').format(moment.isoformat(),
                                                          escape(format_local(moment, tz)))


def check_language(value: str) -> str:
    """`value` as a language code this server speaks; ValueError saying which ones it does."""
    code = (value or "").strip().lower()
    if code not in LANGUAGES:
        raise ValueError(gettext("unknown language %(value)s; use one of %(codes)s",
                                  value=repr(value), codes=", ".join(LANGUAGES)))
    return code


def _locale() -> Locale:
    chosen = g.get("language")
    if not chosen and has_request_context():
        chosen = request.accept_languages.best_match(LANGUAGES)
    return _parsed(chosen or current_app.config["GAMES_LANGUAGE"])


@functools.cache
def _parsed(code: str) -> Locale:
    """The Locale of `code`, parsed once: Flask-Babel parses what the selector gives on every
    request, unless it is a Locale already."""
    return Locale.parse(code)


@contextmanager
def in_language(code: str) -> Iterator[None]:
    """flask_babel.force_locale(code) for a language this server speaks, in a third of its
    time (a mail a seat is sent is composed in its language: three a move that ends a turn):
    the Locale parsed once per process, the catalog taken from Flask-Babel's cache at once.
    The same context attributes are set as force_locale sets them, and restored (nested
    ones too)."""
    try:
        context = g._flask_babel
    except AttributeError:  # no catalog asked for yet in this context
        with force_locale(code):
            yield
        return
    saved = {name: getattr(context, name, None)
             for name in ("babel_translations", "babel_locale", "forced_babel_locale")}
    locale = _parsed(code)
    context.babel_locale = context.forced_babel_locale = locale
    context.babel_translations = _catalog(locale)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None and name == "forced_babel_locale":
                vars(context).pop(name, None)
            else:
                setattr(context, name, value)


def _catalog(locale: Locale):
    """The app's catalog of `locale` as Flask-Babel keeps it (loaded once per app)."""
    domain = get_domain()
    return domain.get_translations_cache(None).get((str(locale), domain.domain[0])) \
        or get_translations()


def use(language: str | None) -> None:
    """Show the rest of this request (or app context) in `language`, e.g. a seat's page in the
    seat's language; None goes back to the browser's choice."""
    g.language = language
    refresh()


def language() -> str:
    """The code of the language being written now."""
    locale = get_locale()
    return locale.language if locale is not None else "en"


def format_local(moment: datetime, tz: str | None) -> str:
    """`moment` in the zone `tz` and the current language: "Tuesday 24 November 2026, 14:30
    (Europe/Berlin)", "Dienstag, 24. November 2026, 14:30 (Europe/Berlin)"; UTC without a zone.
    """
    code = language()
    if code == "en":
        return clock.format_local(moment, tz)  # the English form the server always wrote
    zone = clock.zone(tz) if tz and tz != "UTC" else clock.zone("UTC")
    local = clock.check_utc(moment, "moment").astimezone(zone)
    suffix = "UTC" if tz is None or tz == "UTC" else f"({tz})"
    return (f"{format_date(local.date(), 'full', locale=code)}, "
            f"{format_time(local.time(), 'HH:mm', locale=code)} {suffix}")


def _private_folder(folder: Path) -> None:
    """Make `folder` 0700 whatever the umask (its parent must exist); an existing one of this
    user's that others may use is closed (an older server made it 0777 under umask 0)."""
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:  # made before, or by another process meanwhile
        pass
    info = folder.stat()
    if info.st_uid == os.geteuid() and info.st_mode & 0o077:
        folder.chmod(0o700)


def compile_catalogs(target: Path) -> Path:
    """Write each catalog's `.mo` under `target` when it is missing or older than its `.po`;
    every file is written whole and then renamed, so processes starting together never read a
    half-written one. The folders are 0700 and the files 0600 whatever the umask: anyone who
    could change them could change what every page and mail says."""
    for source in sorted(SOURCES.glob("*/LC_MESSAGES/messages.po")):
        compiled = target / source.relative_to(SOURCES).with_suffix(".mo")
        target.parent.mkdir(parents=True, exist_ok=True)
        for folder in (target, compiled.parent.parent, compiled.parent):
            _private_folder(folder)
        if compiled.exists() and compiled.stat().st_mtime_ns >= source.stat().st_mtime_ns:
            info = compiled.stat()
            if info.st_uid == os.geteuid() and info.st_mode & 0o077:
                compiled.chmod(0o600)
            continue
        with source.open("rb") as f:
            catalog = read_po(f, locale=source.parent.parent.name)
        temporary = compiled.with_name(f"messages.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(descriptor, 0o600)
        with os.fdopen(descriptor, "wb") as f:
            write_mo(f, catalog, use_fuzzy=False)
        os.replace(temporary, compiled)
    return target


def _compiled_folder(instance: Path) -> Path:
    try:
        instance.mkdir(mode=0o700, parents=True, exist_ok=True)  # secrets live there too
        return compile_catalogs(instance / "translations")
    except OSError:  # a read-only instance folder: a folder of this process's own
        return compile_catalogs(Path(tempfile.mkdtemp(prefix="pbem-translations-")))


@pass_context
def _template_gettext(context, string: str, **variables) -> str:
    """A template's `_`/`gettext`, as Jinja's new-style one: always a format string, its text
    Markup (so the variables are escaped) where the template escapes."""
    translated = translations().ugettext(string)
    if context.eval_ctx.autoescape:
        translated = Markup(translated)
    return translated % _shown(variables)


@pass_context
def _template_ngettext(context, singular: str, plural: str, num: int, **variables) -> str:
    """A template's `ngettext`, as Jinja's new-style one (`num` is a variable too)."""
    variables.setdefault("num", num)
    translated = translations().ungettext(singular, plural, num)
    if context.eval_ctx.autoescape:
        translated = Markup(translated)
    return translated % _shown(variables)


def init_app(app: Flask) -> None:
    app.config.setdefault("BABEL_DEFAULT_LOCALE", "en")
    app.config["BABEL_TRANSLATION_DIRECTORIES"] = str(
        _compiled_folder(Path(app.config["INSTANCE_PATH"])))
    babel.init_app(app, locale_selector=_locale)
    # Templates get the same cached lookups (Flask-Babel installs ones that look up each call).
    # jinja2.ext.i18n adds the method, which Environment's typing does not know
    app.jinja_env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext=lambda s: translations().ugettext(s),
        ngettext=lambda s, p, n: translations().ungettext(s, p, n),
        pgettext=lambda c, s: translations().upgettext(c, s),
        npgettext=lambda c, s, p, n: translations().unpgettext(c, s, p, n),
        newstyle=True)
    # `_`, `gettext` and `ngettext` called straight: Jinja's own go through two more context
    # calls each (`_` looks `gettext` up, which calls the lambda above), a few microseconds a
    # sentence, dozens of sentences a mail and thousands of mails a deadline burst.
    app.jinja_env.globals.update(_=_template_gettext, gettext=_template_gettext,
                                 ngettext=_template_ngettext)
    app.jinja_env.finalize = shown_name  # before any template is compiled: codegen reads it
    app.add_template_filter(format_local, "local")
    app.add_template_global(language, "current_language")
    app.add_template_filter(colour, "colour")
    for helper in (status_word, actor_word, bot_word, deadline_tag, digest_lines):
        app.add_template_global(helper)
    app.jinja_env.globals.update(LANGUAGES=LANGUAGES, LANGUAGE_NAMES=LANGUAGE_NAMES)
