"""The German and Spanish catalogs hold every message of the code and the templates, translated.

The extraction is the one docs/translations.md gives, run with `pybabel` as a developer runs it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from jinja2 import Environment

ROOT = Path(__file__).resolve().parent.parent.parent
CATALOGS = ROOT / "pbem" / "translations"
EXTRACT = ["extract", "-F", "babel.cfg", "-k", "N_", "-k", "L_", "-k", "say", "-k", "say_n:1,2",
           "--no-location", "--sort-output"]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Every message of the code and the templates, as `pybabel extract` finds them."""
    target = tmp_path_factory.mktemp("pot") / "messages.pot"
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", *EXTRACT, "-o", str(target),
                    "."], cwd=ROOT, check=True, capture_output=True)
    with target.open("rb") as f:
        return read_po(f)


def test_the_extraction_command_is_the_documented_one():
    """docs/translations.md gives the extraction this test runs."""
    assert "pybabel " + " ".join(EXTRACT) in (ROOT / "docs" / "translations.md").read_text()


def test_extraction_finds_the_pages_mails_and_engine(template):
    """The extraction reaches templates, server code and the engine (not an empty catalog)."""
    ids = {m.id if isinstance(m.id, str) else m.id[0] for m in template if m.id}
    assert "So far in this game" in ids  # templates/email/your_turn.txt
    assert "%(num)d card" in ids  # pbem/games/kardinal_koenig.py, a plural
    # Knights & Castles: its engine's card names, sentences and errors, its templates and its
    # server module.
    assert {"Trade Route", "%(who)s built %(card)s.", "there is no %(card)s in your hand",
            "'%(word)s' is not a player; name a player by colour (%(colours)s)"} <= ids
    assert "The tableaus" in ids  # templates/games/knights-castles/
    assert "Gold: %(gold)s" in ids  # pbem/games/knights_castles.py
    assert len(ids) > 40


MESSAGE_CALLS = {"_", "gettext", "ngettext", "lazy_gettext", "N_", "L_", "say", "say_n"}


def test_no_message_is_written_inside_an_f_string():
    """The extraction does not look inside f-strings: a message written there never reaches the
    catalogs and shows in English on every German and Spanish page (the board picture's
    "Scores" did)."""
    found = set()
    for path in sorted([*(ROOT / "pbem").rglob("*.py"), *(ROOT / "engine").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.JoinedStr):
                continue
            for call in ast.walk(node):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                        and call.func.id in MESSAGE_CALLS and call.args
                        and isinstance(call.args[0], ast.Constant)):
                    found.add(f"{path.relative_to(ROOT)}:{call.lineno} {call.args[0].value!r}")
    assert not found, "messages inside f-strings: " + "; ".join(sorted(found))


# Words a template may write outside {{ _() }} and {% trans %}: a time zone's name, the HTML
# mail's title, a link's path, a class name split from its tag by a block, the turn-file
# header line (the notation's own words, read in every language).
RAW_WORDS_ALLOWED = {
    "templates/admin/dashboard.html": {"UTC"},
    "templates/admin/game.html": {"UTC"},
    "templates/admin/messages.html": {"UTC"},
    "templates/email/admin.html": {"pbem"},
    "templates/email/final.txt": {"rematch", "record", "txt"},
    "templates/seat/page.html": {"class", "wide", "Turn", "move"},
    "templates/seat/preview.html": {"class", "wide"},
}


def _raw_words(source: str) -> list[str]:
    """The words a template writes as text (not markup, not inside a Jinja tag or {% trans %})."""
    parts, in_trans = [], 0
    for _line, kind, value in Environment(extensions=["jinja2.ext.i18n"]).lex(source):
        if kind == "name" and value in ("trans", "pluralize", "endtrans"):
            in_trans += {"trans": 1, "endtrans": -1}.get(value, 0)
        if kind == "data" and not in_trans:
            parts.append(value)
        elif not parts or parts[-1] != "\0":
            parts.append("\0")  # a Jinja expression or tag: text on both sides stays apart
    text = re.sub(r"<(script|style)\b.*?</\1\s*>", " ", "".join(parts), flags=re.DOTALL)
    text = re.sub(r"<!--.*?-->|<[^<>]*>|&#?\w+;", " ", text, flags=re.DOTALL)
    return re.findall(r"[A-Za-zÄÖÜäöüß][A-Za-zÄÖÜäöüß']+", text)


def test_templates_write_no_words_outside_a_message():
    """Text typed straight into a template is never extracted, so a German page shows it in
    English (the seat page's "Save" buttons and the admin's state table did)."""
    untranslated = {}
    for path in sorted((ROOT / "templates").rglob("*")):
        if path.is_file() and path.suffix in (".html", ".txt"):
            name = str(path.relative_to(ROOT))
            words = set(_raw_words(path.read_text(encoding="utf-8")))
            if words - RAW_WORDS_ALLOWED.get(name, set()):
                untranslated[name] = sorted(words - RAW_WORDS_ALLOWED.get(name, set()))
    assert not untranslated


def test_the_raw_word_check_finds_typed_text():
    assert _raw_words('<p class="x">{{ _("Hello") }} <b>Save</b> {% trans %}Fine{% endtrans %}'
                      '</p>') == ["Save"]


# The markup a template's message may hold: a template's gettext output is HTML.
MESSAGE_TAGS = {"a", "b", "br", "code", "em", "i", "kbd", "strong", "span"}


def _text_taken_for_tags(source: str) -> list[str]:
    """The messages of a template that hold '<word>' which is no tag of MESSAGE_TAGS and are
    not escaped by `|forceescape`: the browser reads '<email>' as an unknown tag and shows
    nothing."""
    found = []
    for match in re.finditer(r'_\("((?:[^"\\]|\\.)*)"[^)]*\)(\|forceescape)?', source):
        tags = {t.lower() for t in re.findall(r"</?([A-Za-z][\w-]*)", match[1])}
        if tags - MESSAGE_TAGS and not match[2]:
            found.append(match[1])
    return found


def test_no_template_message_holds_text_the_browser_takes_for_a_tag():
    """'One player a line, as Name <email>, ...' showed as "as Name ," (issue 43)."""
    found = {str(path.relative_to(ROOT)): bad
             for path in sorted((ROOT / "templates").rglob("*.html"))
             if (bad := _text_taken_for_tags(path.read_text(encoding="utf-8")))}
    assert not found, found


def test_the_tag_check_finds_an_address_example():
    assert _text_taken_for_tags('{{ _("as Name <email>") }} {{ _("a <strong>b</strong>") }}'
                                ' {{ _("as Name <email>")|forceescape }}') == ["as Name <email>"]


@pytest.mark.parametrize("language", ["de", "es"])
def test_catalog_is_complete(template, language):
    """Every message id is in the catalog, translated (every plural form), not fuzzy, and its
    placeholders match the English."""
    with (CATALOGS / language / "LC_MESSAGES" / "messages.po").open("rb") as f:
        catalog = read_po(f, locale=language)
    problems = [] if not catalog.fuzzy else [("the header is marked fuzzy (its plural rule "
                                             "would be left out)")]
    if catalog.plural_forms != "nplurals=2; plural=(n != 1);":
        problems.append(f"plural rule {catalog.plural_forms!r}")
    for message in template:
        if not message.id:
            continue
        entry = catalog.get(message.id)
        name = message.id if isinstance(message.id, str) else message.id[0]
        if entry is None:
            problems.append(f"missing: {name!r}")
        elif entry.fuzzy:
            problems.append(f"fuzzy: {name!r}")
        elif not (all(entry.string) if isinstance(entry.string, tuple) else entry.string):
            problems.append(f"untranslated: {name!r}")
        elif isinstance(message.id, tuple) != isinstance(entry.id, tuple):
            problems.append(f"plural form differs: {name!r}")
    for entry, errors in catalog.check():
        problems.extend(f"bad translation of {entry.id!r}: {error}" for error in errors)
    assert not problems, f"{language} catalog: " + "; ".join(problems)



def test_german_says_du_to_every_reader():
    """The German pages and mails say "du" to players and spectators alike (issue 32: the
    spectator page said "Sie"): a polite Sie, Ihnen or Ihr only at a sentence's start, where
    it is "they" or "it"; after a colon, lower case."""
    with (CATALOGS / "de" / "LC_MESSAGES" / "messages.po").open("rb") as f:
        catalog = read_po(f, locale="de")
    polite = re.compile(r"(?<![.!?] )(?<!^)(?<!“)\b(Sie|Ihnen|Ihre?[mnrs]?)\b")
    found = []
    for entry in catalog:
        for text in (entry.string if isinstance(entry.string, tuple) else (entry.string,)):
            if text and polite.search(text):
                found.append(text[:80])
    assert not found, found


def test_compiled_into_the_instance_folder(tmp_path):
    """The app compiles the catalogs into its instance folder and reads German from them; a
    changed source is compiled again."""
    from flask_babel import force_locale, gettext, ngettext

    from pbem import create_app

    app = create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path)})
    compiled = tmp_path / "translations" / "de" / "LC_MESSAGES" / "messages.mo"
    assert compiled.exists()
    assert (tmp_path / "translations" / "es" / "LC_MESSAGES" / "messages.mo").exists()
    with app.app_context():
        with force_locale("de"):
            assert gettext("The board") == "Der Spielplan"
            assert ngettext("%(num)d card", "%(num)d cards", 1) == "1 Karte"
            assert ngettext("%(num)d card", "%(num)d cards", 2) == "2 Karten"
        with force_locale("es"):
            assert ngettext("%(num)d card", "%(num)d cards", 1) == "1 carta"
            assert ngettext("%(num)d card", "%(num)d cards", 3) == "3 cartas"
        with force_locale("en"):
            assert ngettext("%(num)d card", "%(num)d cards", 1) == "1 card"
            assert ngettext("%(num)d card", "%(num)d cards", 0) == "0 cards"
    import os

    os.utime(compiled, ns=(0, 0))  # older than its source: compiled again at the next start
    create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path)})
    assert compiled.stat().st_mtime_ns > 0


def test_language_setting_checked():
    """`[games] language` takes en, de or es and names them when it is anything else."""
    from pbem.ground.config import ConfigError, load_settings

    assert load_settings(overrides={"GAMES_LANGUAGE": "de"})["GAMES_LANGUAGE"] == "de"
    with pytest.raises(ConfigError, match="en, de, es"):
        load_settings(overrides={"GAMES_LANGUAGE": "fr"})
