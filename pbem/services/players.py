"""The players of a game as they are entered: a name and an address ('Name <email>'), or a
computer player; each checked (`parse_player`, `check_player`, `bot_player`) so that a bad
one is refused with a sentence saying what to write. A game's title too (`check_title`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ..games import DEFAULT_KIND, SetupProblem, rules_for
from ..ground import i18n
from ..ground.i18n import _

EMAIL_PATTERN = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+")
MAX_NAME = 60


@dataclass(frozen=True)
class PlayerSpec:
    name: str
    email: str  # "" for a computer player
    bot: str | None = None  # the computer player that plays this seat; None: a person
    language: str | None = None  # en, de or es; None: the [games] language setting


def bot_player(bot: str, kind: str = DEFAULT_KIND, name: str | None = None) -> PlayerSpec:
    """A seat for computer player `bot` of game `kind` (named like "Computer (strong)" unless
    `name` is given); SetupProblem names the computer players there are."""
    check_bot(bot, kind)
    name = (name or "").strip() or i18n.given_bot_name(bot)
    bad = unsafe_character(name)
    if bad or len(name) > MAX_NAME or any(c in "<>\"@" for c in name):
        raise SetupProblem(_("the name %(name)s must be one line of at most %(most)d "
                             "characters, without <, >, \", @ or control characters",
                             name=repr(name[:MAX_NAME]), most=MAX_NAME))
    return PlayerSpec(name, "", bot)


def check_bot(bot: object, kind: str = DEFAULT_KIND) -> str:
    rules = rules_for(kind)
    if bot not in rules.bots:
        raise SetupProblem(_("there is no computer player %(name)s; %(game)s has %(bots)s",
                             name=repr(str(bot)[:40]), game=rules.title,
                             bots=", ".join(rules.bots) if rules.bots
                             else _("no computer players")))
    return bot


PLAYER = re.compile(r"\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>]*)>\s*")
# Joiners that some scripts and names need; every other format character (bidi overrides,
# invisible marks) is refused with the controls and separators.
JOINERS = {"\u200c", "\u200d"}


def unsafe_character(text: str) -> str | None:
    """The first character of `text` that must not be in a name or title, described, or None.

    Line and paragraph separators (U+2028, U+2029, U+0085 too) and control characters break a
    mail header wherever the name is written, so every mail naming it would fail; bidi controls
    make a name read as something else."""
    for c in text:
        category = unicodedata.category(c)
        if category in ("Zl", "Zp") or c == "\x85":
            return _("a line or paragraph separator (U+%(code)s)", code=f"{ord(c):04X}")
        if category in ("Cc", "Cs", "Co", "Cn") or category == "Cf" and c not in JOINERS:
            return _("a control or invisible character (U+%(code)s)", code=f"{ord(c):04X}")
    return None


def parse_player(text: str) -> PlayerSpec:
    """Read 'Name <email>' exactly (nothing before, after or between is dropped silently);
    SetupProblem says what is wrong with it."""
    text = text or ""
    bad = unsafe_character(text)
    if bad:
        raise SetupProblem(_("%(text)s contains %(bad)s; write each player as one line "
                             "'Name <email>'", text=repr(text[:80]), bad=bad))
    match = PLAYER.fullmatch(text)
    if match is None:
        raise SetupProblem(_("write each player as 'Name <email>', not %(text)s",
                             text=repr(text[:80])))
    name = match["name"]
    if len(name) >= 2 and name[0] == name[-1] == '"':
        name = name[1:-1]
    return check_player(name, match["email"], text)


def check_player(name: str, email: str, shown: str | None = None) -> PlayerSpec:
    shown = shown if shown is not None else f"{name} <{email}>"
    name, email = (name or "").strip(), (email or "").strip()
    if not name or not email:
        raise SetupProblem(_("write each player as 'Name <email>', not %(text)s",
                             text=repr(shown)))
    bad = unsafe_character(name)
    if bad:
        raise SetupProblem(_("the name %(name)s contains %(bad)s; write it on one line "
                             "without control characters", name=repr(name[:MAX_NAME]),
                             bad=bad))
    if len(name) > MAX_NAME or any(c in "<>\"@" for c in name):
        raise SetupProblem(_("the name %(name)s must be at most %(most)d characters, "
                             "without <, >, \", @ or control characters",
                             name=repr(name[:MAX_NAME]), most=MAX_NAME))
    if len(email) > 254 or not EMAIL_PATTERN.fullmatch(email):
        raise SetupProblem(_("%(email)s is not an email address like anna@example.org",
                             email=repr(email[:80])))
    return PlayerSpec(name, email)


def check_title(title: str) -> str:
    """A game's name as shown in mail subjects: one line of 1 to 100 printable characters."""
    title = (title or "").strip()
    bad = unsafe_character(title)
    if bad:
        raise SetupProblem(_("the game's title contains %(bad)s; write it on one line", bad=bad))
    if not 0 < len(title) <= 100 or not title.isprintable():
        raise SetupProblem(_("the game's title must be one line of 1 to 100 printable "
                             "characters"))
    return title
