"""The one reader of a new game's settings, for the three forms that make a game: the admin's
create form (`read_admin_form`), the public "new game" page (`read_new_form`) and the lobby's
"post an open game" (`read_lobby_form`).

Each form is a few calls of `SettingsReader`, one per setting, each small: it reads its inputs,
checks them with the service that owns the setting (players, deadlines, the game's rules) and
files a refusal under the form field it is about. Which field that is comes from the refusal's
`field` (`SettingsError`), never from its words: those are in the reader's language. Does not
store anything; the forms' callers create, propose or post what was read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import current_app

from ..games import GameRules, SetupProblem, game_kinds, rules_for
from ..ground import i18n
from ..ground.i18n import gettext as _
from .deadlines import TimeControl, time_control
from .players import PlayerSpec, bot_player, check_player, check_title

ADMIN_ROWS = 5  # player rows of the admin's create form
SEATINGS = ("joined", "drawn")  # how the lobby seats the players of an open game


class SettingsReader:
    """A create form read one setting at a time: each method returns the checked value (None,
    or a stand-in, when it is refused) and keeps the refusal in `errors`, by form field."""

    def __init__(self, form: Mapping[str, Any], rules: GameRules):
        self.form = form
        self.rules = rules
        self.errors: dict[str, str] = {}

    def text(self, name: str) -> str:
        return str(self.form.get(name) or "").strip()

    def refuse(self, problem: SetupProblem, field: str) -> None:
        """File `problem` under its own field when it names one, else under `field`."""
        self.errors[getattr(problem, "field", None) or field] = str(problem)

    def number(self, name: str, digits: int) -> int:
        """A whole number of at most `digits` digits from field `name`; -1 when it is not one."""
        raw = self.text(name)
        return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= digits else -1

    def variant(self) -> str:
        variant = self.text("variant") or next(iter(self.rules.variants))
        if variant not in self.rules.variants:
            self.errors["variant"] = _("choose one of the rules offered")
        return variant

    def time(self, reminders: bool) -> TimeControl | None:
        """The time control; a form without a reminders field shows a refusal of the
        reminders (which then come from the settings) beside the hours."""
        try:
            return time_control(self.number("deadline_hours", 4),
                                self.text("reminders") if reminders else None,
                                self.form.get("weekend_pause") == "on",
                                self.text("timezone") or "UTC")
        except SetupProblem as exc:
            field = getattr(exc, "field", "timezone")
            self.errors[field if reminders or field != "reminders" else "deadline_hours"] = \
                str(exc)
            return None

    def title(self, default: str | None) -> str | None:
        title = self.text("title")
        if not title:
            return default
        try:
            return check_title(title)
        except SetupProblem as exc:
            self.refuse(exc, "title")
            return title

    def rated(self) -> bool:
        return self.form.get("rated") == "on"

    def seed(self) -> str | None:
        seed = self.text("seed") or None
        if seed is not None and (len(seed) > 100 or not seed.isprintable()):
            self.errors["seed"] = _("the seed must be 1 to 100 printable characters")
        return seed

    def start(self, seats: int) -> int | None:
        """The seat that moves first; None: drawn by lot."""
        start = str(self.form.get("start", "random"))
        if start == "random":
            return None
        if start.isascii() and start.isdigit() and len(start) < 3 and int(start) < seats:
            return int(start)
        self.errors["start"] = _("choose a player who is in the game, or random")
        return None

    def absent_bot(self) -> str | None:
        bot = self.text("absent_bot") or None
        if bot is not None and bot not in self.rules.bots:
            self.errors["absent_bot"] = _("choose the default move or one of the computer "
                                          "players offered")
        return bot

    def player(self, i: int, name: str, email: str) -> PlayerSpec | None:
        """Player row `i` (its fields name{i} and email{i})."""
        try:
            return check_player(name, email)
        except SetupProblem as exc:
            self.refuse(exc, f"email{i}" if name else f"name{i}")
            return None

    def distinct_emails(self, players: list[PlayerSpec]) -> None:
        emails = [p.email.lower() for p in players if p.bot is None]
        if len(set(emails)) != len(emails):
            self.errors["players"] = _("each player needs their own email address")


@dataclass(frozen=True)
class NewGame:
    """The admin's create form, checked."""

    players: list[PlayerSpec]
    colours: list[str]
    time: TimeControl | None
    title: str | None
    seed: str | None
    variant: str
    absent_bot: str | None
    rated: bool
    start: int | None


def _admin_row(reader: SettingsReader, i: int) -> PlayerSpec | None:
    """Row `i` of the admin's form: a person or a computer player; None when refused."""
    name, email = reader.text(f"name{i}"), reader.text(f"email{i}")
    bot = reader.text(f"bot{i}")
    if bot:  # a computer player: a name is optional, an address is not used
        try:
            return bot_player(bot, reader.rules.kind, name)
        except SetupProblem as exc:
            reader.errors[f"bot{i}"] = str(exc)
            return None
    try:
        language = i18n.check_language(reader.text(f"language{i}")
                                       or current_app.config["GAMES_LANGUAGE"])
    except ValueError as exc:  # a language the form did not offer
        reader.errors[f"language{i}"] = str(exc)
        return None
    person = reader.player(i, name, email)
    return None if person is None else dataclasses.replace(person, language=language)


def _admin_colour(reader: SettingsReader, i: int, taken: list[str]) -> str:
    """The colour of row `i`, refused when the game has no such colour or it is `taken`."""
    colours = reader.rules.colours
    colour = str(reader.form.get(f"colour{i}") or "")
    if colour not in colours:
        reader.errors[f"colour{i}"] = _("choose one of %(colours)s",
                                        colours=", ".join(map(i18n.colour, colours)))
    elif colour in taken:
        reader.errors[f"colour{i}"] = _("another player already has this colour")
    return colour


def read_admin_form(form: Mapping[str, Any], rules: GameRules) -> tuple[NewGame, dict[str, str]]:
    """The admin's create form checked, and its errors by field name."""
    reader = SettingsReader(form, rules)
    players: list[PlayerSpec] = []
    colours: list[str] = []
    for i in range(ADMIN_ROWS):
        if not (reader.text(f"name{i}") or reader.text(f"email{i}") or reader.text(f"bot{i}")):
            continue
        player = _admin_row(reader, i)
        players += [player] if player is not None else []
        colours.append(_admin_colour(reader, i, colours))
    if not rules.min_players <= len(colours) <= rules.max_players:
        reader.errors["players"] = _("%(game)s is for %(least)d to %(most)d players; you filled "
                                     "in %(count)d", game=rules.title, least=rules.min_players,
                                     most=rules.max_players, count=len(colours))
    reader.distinct_emails(players)
    start = reader.start(len(colours))
    game = NewGame(players=players, colours=colours, time=reader.time(reminders=True),
                   title=reader.title(None), seed=reader.seed(), variant=reader.variant(),
                   absent_bot=reader.absent_bot(), rated=reader.rated(), start=start)
    return game, reader.errors


@dataclass
class Draft:
    """The checked "new game" form."""

    kind: str
    starter: PlayerSpec
    friends: list[PlayerSpec]
    colours: list[str]
    title: str
    variant: str
    time: TimeControl


def _friends(reader: SettingsReader) -> tuple[list[PlayerSpec], list[str]]:
    """The friends the starter invites (rows 1 and on: an address, a name optional) and the
    colours of everyone, the starter's first."""
    friends, colours = [], [str(reader.form.get("colour0") or "")]
    for i in range(1, reader.rules.max_players):
        email, name = reader.text(f"email{i}"), reader.text(f"name{i}")
        if not email and not name:
            continue
        try:
            friends.append(check_player(name or email.partition("@")[0][:40], email))
        except SetupProblem as exc:
            reader.errors[f"email{i}"] = str(exc)
        colours.append(str(reader.form.get(f"colour{i}") or ""))
    return friends, colours


def _new_form_players(reader: SettingsReader, colours: list[str], invited: int) -> None:
    rules, errors = reader.rules, reader.errors
    for i, colour in enumerate(colours):
        if colour not in rules.colours:
            errors[f"colour{i}"] = _("choose one of %(colours)s", colours=", ".join(rules.colours))
    if len(set(colours)) != len(colours):
        errors["players"] = _("each player needs their own colour")
    if not rules.min_players <= invited <= rules.max_players:
        errors["players"] = _("%(game)s is for %(low)d to %(high)d players: invite %(fewest)d "
                              "to %(most)d friends.", game=rules.title, low=rules.min_players,
                              high=rules.max_players, fewest=rules.min_players - 1,
                              most=rules.max_players - 1)


def read_new_form(form: Mapping[str, Any], kind: str) -> tuple[Draft | None, dict[str, str]]:
    """The public "new game" form checked: a Draft, or the errors by field name."""
    reader = SettingsReader(form, rules_for(kind))
    try:
        starter = check_player(reader.text("name"), reader.text("email"))
    except SetupProblem as exc:
        reader.errors["email" if reader.text("name") else "name"] = str(exc)
        starter = None
    friends, colours = _friends(reader)
    refused = sum(1 for k in reader.errors if k.startswith("email") and k != "email")
    _new_form_players(reader, colours, 1 + len(friends) + refused)
    reader.distinct_emails(([starter] if starter else []) + friends)
    time = reader.time(reminders=False)
    title = reader.title(reader.rules.title)
    variant = reader.variant()
    if reader.errors or starter is None or time is None or title is None:
        return None, reader.errors
    return Draft(kind, starter, friends, colours, title, variant, time), {}


@dataclass(frozen=True)
class Posting:
    """The checked "post an open game" form of the lobby."""

    kind: str
    variant: str
    players: int
    time: TimeControl
    rated: bool
    min_rating: float | None
    seating: str


def _min_rating(reader: SettingsReader) -> float | None:
    raw = reader.text("min_rating")
    if not raw:
        return None
    try:
        minimum = float(raw)
        if -100 <= minimum <= 100:
            return minimum
    except ValueError:
        pass
    reader.errors["min_rating"] = _("the minimum rating is a number from -100 to 100, or blank "
                                    "for none")
    return None


def read_lobby_form(form: Mapping[str, Any]) -> tuple[Posting | None, dict[str, str]]:
    """The lobby's "post an open game" form checked: a Posting, or the errors by field."""
    kind = str(form.get("game") or "")
    if kind not in game_kinds():
        return None, {"game": _("choose one of the games offered")}
    reader = SettingsReader(form, rules_for(kind))
    rules = reader.rules
    variant = reader.variant()
    players = reader.number("players", 2)
    if not rules.min_players <= players <= rules.max_players:
        reader.errors["players"] = _("%(game)s is for %(low)d to %(high)d players",
                                     game=rules.title, low=rules.min_players,
                                     high=rules.max_players)
    time = reader.time(reminders=False)
    minimum = _min_rating(reader)
    seating = reader.text("seating") or "joined"
    if seating not in SEATINGS:
        reader.errors["seating"] = _("choose one of the options offered")
    if reader.errors or time is None:
        return None, reader.errors
    return Posting(kind, variant, players, time, reader.rated(), minimum, seating), {}
