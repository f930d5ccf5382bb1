"""pbem.ground.i18n's gettext/ngettext, which keep the catalog per context, translate as Flask-Babel
does: the locale selector's language, `force_locale` inside and back outside, `refresh`, and
the same words in templates and in Python code.

A catalog for Esperanto ("eo", a language the server does not offer) is compiled into a
temporary folder, so these tests do not depend on the real catalogs' words."""

from __future__ import annotations

import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from flask import render_template_string
from flask_babel import force_locale, refresh

from pbem import create_app
from pbem.ground import i18n


@pytest.fixture
def app(tmp_path):
    catalog = Catalog(locale="eo")
    catalog.add("Alliances", "Aliancoj")
    catalog.add(("%(num)d card", "%(num)d cards"), ("%(num)d karto", "%(num)d kartoj"))
    catalog.add("Scores: %(scores)s", "Poentoj: %(scores)s")
    folder = tmp_path / "translations" / "eo" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    with open(folder / "messages.mo", "wb") as out:
        write_mo(out, catalog)
    app = create_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SECRET_KEY": "i18n"})
    # Beside the server's own catalogs: Flask-Babel merges a locale's catalogs from every folder.
    app.extensions["babel"].translation_directories.append(str(tmp_path / "translations"))
    yield app
    # Flask-Babel keeps loaded catalogs per (locale, domain) for the process: drop this one.
    i18n.babel.domain_instance.cache.pop(("eo", "messages"), None)


TEMPLATE = "{{ _('Alliances') }} / {{ ngettext('%(num)d card', '%(num)d cards', n) }}"


def test_forced_locale_is_used_inside_and_left_outside(app):
    with app.test_request_context("/"):
        assert i18n.gettext("Alliances") == "Alliances"
        with force_locale("eo"):
            assert i18n.gettext("Alliances") == "Aliancoj"
            assert i18n.ngettext("%(num)d card", "%(num)d cards", 1) == "1 karto"
            assert i18n.ngettext("%(num)d card", "%(num)d cards", 3) == "3 kartoj"
            assert i18n.gettext("Scores: %(scores)s", scores="7") == "Poentoj: 7"
            assert render_template_string(TEMPLATE, n=2) == "Aliancoj / 2 kartoj"
        assert i18n.gettext("Alliances") == "Alliances"
        assert i18n.ngettext("%(num)d card", "%(num)d cards", 3) == "3 cards"
        assert render_template_string(TEMPLATE, n=1) == "Alliances / 1 card"


def test_the_locale_selector_and_refresh_are_followed(app, monkeypatch):
    chosen = {"locale": "en"}
    monkeypatch.setattr(app.extensions["babel"], "locale_selector", lambda: chosen["locale"])
    with app.test_request_context("/"):
        assert i18n.gettext("Alliances") == "Alliances"
        chosen["locale"] = "eo"
        assert i18n.gettext("Alliances") == "Alliances"  # chosen once per request, as before
        refresh()
        assert i18n.gettext("Alliances") == "Aliancoj"
        assert render_template_string(TEMPLATE, n=5) == "Aliancoj / 5 kartoj"
    with app.test_request_context("/"):  # a new request asks the selector again
        assert i18n.gettext("Alliances") == "Aliancoj"


def test_words_outside_any_app_context_are_the_source_words():
    assert i18n.gettext("Scores: %(scores)s", scores="1") == "Scores: 1"
    assert i18n.ngettext("%(num)d card", "%(num)d cards", 2) == "2 cards"


def test_template_variables_are_escaped(app):
    with app.test_request_context("/"):
        assert render_template_string("{{ _('Scores: %(scores)s', scores=s) }}",
                                      s="<b>") == "Scores: &lt;b&gt;"
