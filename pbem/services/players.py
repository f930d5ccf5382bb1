"""The players of a game as they are entered: a name and an address ('Name <email>'), or a
computer player; each checked (`parse_player`, `check_player`, `bot_player`) so that a bad
one is refused with a sentence saying what to write. A game's title too (`check_title`).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from dataclasses import dataclass

from confusables import confusable_characters

from ..games import DEFAULT_KIND, SetupProblem, rules_for
from ..ground import i18n
from ..ground.i18n import _


def network_of(client: str | None) -> str | None:
    """The network a client address belongs to, as limits and ratings count it: an IPv4
    address's /24, an IPv6 address's /64 (one subscriber's usual share of either), the
    text itself (cut to 64 characters) when it is no IP address; None for None."""
    if client is None:
        return None
    try:
        address = ipaddress.ip_address(client.strip())
    except ValueError:
        return client[:64]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    prefix = 24 if address.version == 4 else 64
    if address.is_loopback:  # ::1's /64 would hold more than the loopback
        prefix = address.max_prefixlen if address.version == 6 else prefix
    return str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))


# Providers whose mailboxes ignore dots in the local part (and take one another's domain).
DOTLESS_DOMAINS = {"gmail.com": "gmail.com", "googlemail.com": "gmail.com"}


def person_of(email: str) -> str:
    """An address as one mailbox: lower case, without a +tag, without dots for providers that
    ignore them (anna.b+x@googlemail.com and AnnaB@gmail.com are one person)."""
    local, _, domain = email.strip().lower().rpartition("@")
    local = local.split("+", 1)[0]
    if domain in DOTLESS_DOMAINS:
        local, domain = local.replace(".", ""), DOTLESS_DOMAINS[domain]
    return f"{local}@{domain}"


def name_key(name: str) -> str:
    """A name as one to tell it from others by: compatibility-normalised, case-folded, without
    spaces or invisible characters, each character replaced by the least ASCII letter or digit
    it can be confused with (Unicode's confusables: Cyrillic "Н" and "H", "0" and "O")."""
    return "".join(_plain(c) for c in unicodedata.normalize("NFKC", name).casefold())


@functools.lru_cache(maxsize=4096)
def _plain(c: str) -> str:
    """One character as `name_key` writes it ("" for a space or an invisible one)."""
    if c.isspace() or unicodedata.category(c)[0] in "ZC":
        return ""
    alike = [x for x in (confusable_characters(c) or []) + [c]
             if len(x) == 1 and x.isascii() and x.isalnum()]
    return min(x.casefold() for x in alike) if alike else c


@functools.cache
def reserved_name_keys() -> frozenset[str]:
    """The name keys of the computer players' names, as every language shows them: nobody
    else may take them."""
    keys = set()
    for level in i18n.BOT_LEVELS:
        keys.add(name_key(i18n.given_bot_name(level)))
        for language in i18n.LANGUAGES:
            with i18n.in_language(language):
                keys.add(name_key(str(_("Computer (%(bot)s)", bot=i18n.bot_word(level)))))
    return frozenset(keys)


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
