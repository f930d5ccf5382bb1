"""Kardinal & König behind the server's game interface: a thin layer over
`engine.kardinal_koenig`."""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import orjson

import engine.kardinal_koenig as kk
from engine.kardinal_koenig.bots import BOT_NAMES, choose_move
from engine.kardinal_koenig.moves import MAX_NOTATION_LENGTH
from engine.kardinal_koenig.serialize import to_dict
from engine.kardinal_koenig.state import JOKER_ANY, JOKER_OTHER
from engine.kardinal_koenig.svg import SvgOptions, board_pieces, board_svg, panel_height
from engine.words import Phrase

from ..ground import i18n
from ..ground.i18n import N_, gettext, ngettext
from ..ground.kept import Kept
from .interface import (
    ByState,
    MoveError,
    ResultTable,
    RulesBase,
    SetupProblem,
    ShownBase,
    StateCache,
)

if TYPE_CHECKING:
    from engine.kardinal_koenig.board import CardColour

# The invitation's and the seat page's summary of the rules, in English; the catalogs hold the
# German and Spanish, each written from that language's rule book
# (../shared/rules/kardinal-koenig.{en,de,es}.md) in its own words. %(joker)s: JOKER_WHERE.
HOW_TO_PLAY = (
    N_("Kardinal & König (Michael Schacht, 2000; in English \"Web of Power\") is played on a "
       "map of twelfth-century Europe. On your turn you either play cards to place pieces in "
       "one country, or exchange one card; then you draw back up to three cards, from the deck "
       "or the face-up cards."),
    N_("Each card of a country's colour places one piece there, and two cards of one colour "
       "together are a joker that places one piece in %(joker)s. You play at most three cards "
       "for at most two pieces, all in one country, and where nobody has built yet only one "
       "monastery: so two cards of the country's colour place two pieces, and so do one such "
       "card and a joker pair."),
    N_("A monastery goes on a free cloister field. An advisor goes on the country's crest, but a "
       "crest holds no more advisors than the most monasteries one player has in that country."),
    N_("When the deck runs out the first time, monasteries are scored (intermediate scoring). "
       "When it runs out the second time, the round is played to its end and the game is over."),
    N_("Final scoring: monasteries per country by rank, the alliances between two countries "
       "where you hold the most advisors in both, and chains of four or more of your "
       "monasteries along the roads. The most points win; a tie goes to whoever has more "
       "pieces left."),
)
# Where a joker places its piece, by the game's reading of the rules (its joker_anywhere).
JOKER_WHERE = (N_("any other country"), N_("any country, its own colour's too"))
RULES_URL = "https://boardgamegeek.com/boardgame/21/web-of-power/files"  # the rule books
# The rule books' two readings of the joker, named after the books (docs/rules-notes.md).
VARIANTS = {
    "german": N_("German rule book: two cards of one colour are a joker for another country"),
    "english": N_("English (v1.3) and Spanish rule books: two cards of one colour are a joker "
                  "for any country, their own too"),
}
_JOKER = {"german": JOKER_OTHER, "english": JOKER_ANY}


def _said(exc: Exception) -> str:
    """An engine error's reason in the reader's language (a Phrase; plain English otherwise)."""
    return i18n.render(exc.args[0]) if exc.args else str(exc)


class KardinalKoenig(RulesBase, ShownBase):
    kind = "kardinal-koenig"
    title = "Kardinal & König"
    min_players = 3
    max_players = 5
    colours = kk.PLAYER_COLOURS
    variants = VARIANTS
    rules_url = RULES_URL  # the first is the default
    # A whole turn for the turn file, in the notation: shown in the reader's words (in_words).
    order_notation = ("GG Franken: Mainz", "draw deck", "draw G")

    @property
    def order_examples(self) -> tuple[str, ...]:
        return tuple(self.in_words(n) for n in self.order_notation)

    def in_words(self, notation: str) -> str:
        """A move of the notation in the reader's words ('G Bayern: Rat', 'ziehe Stapel'),
        read back as the same move: what the turn file and the list of legal moves show."""
        from engine.kardinal_koenig.moves import written

        return written(notation, i18n.language())
    variant_help = ("which rule book's reading to play, german (the default: a joker of two "
                    "cards of one colour places a piece in another country) or english (the "
                    "English v1.3 and Spanish books: in any country)")
    variant_question = N_("The rule books disagree on the joker; choose whose reading this "
                          "game follows (shown on every page of the game).")

    def __init__(self, board: kk.Board | None = None):
        self.board = board or kk.default_board()
        # States are immutable, so a stored text read once can be shared by later requests.
        self._states = StateCache(self._read)
        self._views = ByState(self._view_dict)
        self._moves = Kept(4096)
        # the latest move described: (before, move, after, {to mover: lines})
        self._told: tuple[Any, Any, Any, dict] | None = None

    # --- set-up and storage ---------------------------------------------------------------

    def new_state(self, colours: list[str], seed: str, start: int | None,
                  variant: str | None = None) -> kk.GameState:
        variant = variant or next(iter(VARIANTS))
        if variant not in VARIANTS:
            raise SetupProblem(gettext("the rules variant must be one of %(variants)s, not "
                                       "%(variant)s", variants=", ".join(VARIANTS),
                                       variant=repr(variant)))
        try:
            return kk.new_game(tuple(colours), seed, self.board, start, joker=_JOKER[variant])
        except kk.SetupError as exc:
            raise SetupProblem(_said(exc)) from None

    def dumps(self, state: kk.GameState) -> str:
        # The engine's to_json (compact, non-ASCII as is) written by orjson: the same text in
        # under a third of the time (tests/server/test_move_path.py checks it is the same). What orjson
        # refuses (a lone surrogate, which json writes as it is) is written by the engine.
        try:
            text = orjson.dumps(to_dict(state)).decode()
        except orjson.JSONEncodeError:
            text = kk.to_json(state)
        self._states.remember(text, state)  # what the next request reads back
        return text

    def loads(self, text: str) -> kk.GameState:
        return self._states.get(text)

    def _read(self, text: str) -> kk.GameState:
        return kk.from_json(text, self.board)

    def variant_of(self, state: kk.GameState) -> str:
        return "english" if state.joker_anywhere else "german"

    def summary(self) -> str:
        return gettext("Michael Schacht's game of monasteries and advisors on a map of "
                       "twelfth-century Europe (2000; in English \"Web of Power\").")

    def how_to_play(self, state: kk.GameState) -> list[str]:
        """A few paragraphs for the invitation mail, in this game's reading of the rules."""
        joker = gettext(JOKER_WHERE[state.joker_anywhere])
        return [gettext(paragraph, joker=joker) for paragraph in HOW_TO_PLAY]

    def variant_label(self, variant: str) -> str:
        """A rules reading in the reader's words."""
        return gettext(VARIANTS[variant])

    def variant_note(self, state: kk.GameState) -> str:
        """The rules reading this game is played with, for every page and mail of the game."""
        return gettext("Rules: %(variant)s.", variant=self.variant_label(self.variant_of(state)))

    # --- turns ----------------------------------------------------------------------------

    def ply(self, state: kk.GameState) -> int:
        return state.ply

    # A logged move that goes on with the turn in progress (pbem.services.turns): the draws after a
    # placement, an exchange or a pass belong to its turn.
    continues_turn = ("draw",)

    def mid_turn(self, state: kk.GameState) -> bool:
        """Whether the seat to move is drawing its cards back, in the middle of its turn."""
        return state.phase == "draw"

    def to_move(self, state: kk.GameState) -> int | None:
        return None if state.is_over else state.current

    def start_seat(self, state: kk.GameState) -> int:
        return state.start

    def legal(self, state: kk.GameState) -> list[str]:
        return [] if state.is_over else [str(m) for m in kk.legal_moves(state)]

    def move_patterns(self, state: kk.GameState) -> list[str]:
        return []  # every move is listed

    def parse(self, state: kk.GameState, text: str) -> kk.Move:
        # A move's text reads the same in every position (moves are values): read once.
        move = self._moves.get(text)
        if move is not None:
            return move
        try:
            return self._moves.put(text, kk.parse_move(text, self.board))
        except kk.NotationError as exc:
            raise MoveError(_said(exc)) from None  # said in the reader's language: not kept

    def apply(self, state: kk.GameState, move: kk.Move) -> kk.GameState:
        try:
            return kk.apply_move(state, move)
        except (kk.IllegalMoveError, kk.NotationError) as exc:
            raise MoveError(_said(exc)) from None

    def replay(self, state: kk.GameState, notations: list[str]) -> kk.GameState:
        """The game `state` belongs to (same colours, seed, start seat) after `notations`."""
        return kk.replay(state.players, state.seed, notations, self.board, state.start,
                             joker=state.joker)

    def history_state(self, state: kk.GameState, notations: list[str]) -> kk.GameState:
        """The game `state` belongs to as it was after `notations`, its first logged moves."""
        return kk.replay(state.players, state.seed, notations, self.board, state.start,
                             joker=state.joker)

    def notation(self, move: kk.Move) -> str:
        return str(move)

    def notation_for(self, state, notation: str, mover: int, reader: int | None) -> str:
        return notation  # every move of this game is public

    def describe(self, before, move, after, reader: int | None) -> list[Phrase]:
        """The engine's sentences (Phrases: English, with their message ids for the log).

        The engine names a card drawn from the deck to its drawer alone and tells every other
        reader the same (engine.kardinal_koenig.narrate): a move told to each seat in turn is
        told twice, once to the mover and once to the rest (the same list, the latest move's)."""
        last = self._told
        if last is None or last[0] is not before or last[1] is not move \
                or last[2] is not after:
            last = self._told = (before, move, after, {})
        told = reader == before.current
        lines = last[3].get(told)
        if lines is None:
            lines = last[3][told] = kk.describe(before, move, after, reader)
        return lines

    def foretell(self, before, move, after) -> list[str]:
        return [i18n.render(line) for line in kk.foretell(before, move, after)]

    def foretold_state(self, before, move, after):
        """The position a preview may show. A draw changes no piece on the map, but after it
        the hand holds the drawn card and the face-up row is refilled from the deck, so a draw
        is previewed on the board as it is now; other moves reveal nothing and show `after`."""
        return before if isinstance(move, kk.Draw) else after

    def default_move(self, state: kk.GameState) -> str:
        """The move the server makes when a seat misses its deadline (docs/rules-notes.md).

        In a refill: draw from the deck. Otherwise exchange the card the seat holds most of,
        but keep a pair (it is a joker) when another card can go instead; ties go to the
        colour that comes first in the box (red, green, cream, orange, purple). When no
        exchange is possible: pass, or else the first legal move."""
        legal = self.legal(state)
        if state.phase == "draw":
            preferred = ["draw deck"]
        else:
            counts = Counter(state.hands[state.current])
            order = [c.code for c in self.board.cards]
            ranked = sorted(counts, key=lambda code: (-counts[code], order.index(code)))
            if len(ranked) > 1 and counts[ranked[0]] == 2:
                ranked = ranked[1:] + ranked[:1]  # keep the joker pair
            preferred = [f"exchange {code}" for code in ranked] + ["pass"]
        for move in preferred:
            if move in legal:
                return move
        return legal[0]

    bots = BOT_NAMES

    def bot_move(self, state: kk.GameState, bot: str, seed: str) -> str:
        """The move computer player `bot` makes for the seat to move. It is handed that seat's
        view only (`kk.view_for`), never the state, so it knows no hidden card."""
        if state.is_over:
            raise MoveError(gettext("the game is over; no more moves can be made"))
        view = kk.view_for(state, state.current)
        return str(choose_move(bot, view, random.Random(seed), self.board))

    # --- what a seat sees -----------------------------------------------------------------

    def view(self, state: kk.GameState, seat: int | None) -> kk.SeatView:
        return kk.view_for(state, seat)

    def view_dict(self, state: kk.GameState, seat: int | None) -> dict:
        return self._views(state, seat)

    @staticmethod
    def _view_dict(state: kk.GameState, seat: int | None) -> dict:
        return kk.view_for(state, seat).to_dict()

    def board_picture(self, state: kk.GameState, seat: int | None,
                      interactive: bool = False, move: kk.Move | None = None) -> str:
        """The board as one <svg> element, from `seat`'s view (None: a spectator's), so it
        can show no card the reader may not see. With `interactive`, the free cloister fields
        and the crests are marked to be clicked (the seat page's script builds a move). With
        `move` (the one that led to `state`), the pieces it placed are ringed as new."""
        view = kk.view_for(state, seat)
        # (a seat's view has its colour)
        who = gettext("a spectator") if seat is None else i18n.colour(cast(str, view.colour))
        marked: set[str] = set()
        if isinstance(move, kk.Place):
            marked.update(move.country if p == kk.ADVISOR else p for p in move.pieces)
        title = (gettext("The board as it will be after your move %(move)s", move=str(move))
                 if move is not None else
                 gettext("The board after %(moves)d moves, as %(who)s sees it", moves=state.ply,
                         who=who))
        return board_svg(self.board, view, SvgOptions(interactive=interactive, title=title,
                                                      marked=marked, words=i18n.render))

    def picture_pieces(self, state: kk.GameState, pixels_per_unit: float
                       ) -> tuple[float, list[tuple[int, int, int, int, str]]]:
        """The spectator's still picture of `state` in layers: the room under the map its panel
        needs (for `picture_board`) and the pieces drawn over that board (`board_pieces`)."""
        view = kk.view_for(state, None)
        return panel_height(view), board_pieces(self.board, view, pixels_per_unit,
                                                words=i18n.render)

    def picture_samples(self) -> list[kk.GameState]:
        """Positions whose still pictures together show every colour a still picture can: the
        board's, each player colour's monasteries, advisors and score, and every card colour
        face up (pbem.games.picture takes the palette of its PNGs from them). A seeded game of every
        colour, taken where its face-up cards show a colour not yet shown, from its 40th move."""
        state = self.new_state(list(self.colours), "picture-sample", 0)
        chooser = random.Random("picture-sample")
        samples: list[kk.GameState] = []
        shown: set[str] = set()
        every = {card.colour for card in self.board.cards}
        while shown != every and not state.is_over:
            if state.ply >= 40 and not shown.issuperset(self._colours_up(state)):
                samples.append(state)
                shown.update(self._colours_up(state))
            state = self.apply(state, self.parse(state, chooser.choice(self.legal(state))))
        return samples

    def _colours_up(self, state: kk.GameState) -> set[str]:
        # (the cards face up are the board's)
        return {cast("CardColour", self.board.find_card(code)).colour for code in state.face_up}

    def picture_board(self, room_below: float) -> str:
        """The bare board of the still picture (no piece, no panel), `room_below` left under
        the map: the same for every position with that panel, and in every language (its only
        sentences are its titles and description, which a picture does not show: English)."""
        return board_svg(self.board, None, SvgOptions(room_below=room_below))

    def scores(self, state: kk.GameState) -> dict[str, int]:
        return dict(zip(state.players, state.scores))

    def outcome(self, state: kk.GameState) -> dict | None:
        result = kk.outcome(state)
        return None if result is None else result.to_dict(state.players)

    def outcome_lines(self, state: kk.GameState) -> list[str]:
        result = kk.outcome(state)
        if result is None:
            return []
        names = gettext(" and ").join(i18n.colour(state.players[s]) for s in result.winners)
        return [gettext("The game is over: %(reason)s.", reason=i18n.render(result.reason)),
                *(i18n.render(line) for line in result.breakdown.lines()),
                ngettext("Winner: %(names)s.", "Winners: %(names)s.", len(result.winners),
                         names=names)]

    def result_table(self, state: kk.GameState) -> ResultTable | None:
        """The result in one table: the intermediate scoring, the final scoring by part (each
        country's monasteries, the alliances, the chains), the total, pieces left (the
        tie-break), rank and winners; None while the game goes on."""
        result = kk.outcome(state)
        if result is None:
            return None
        n = len(state.players)
        middle = result.intermediate.totals() if result.intermediate else (0,) * n
        final = result.breakdown
        parts = [(gettext("Intermediate scoring (monasteries)"), middle)]
        parts += [(gettext("Monasteries in %(country)s", country=c.country), c.points)
                  for c in final.monasteries]
        by_part = final.part_totals()
        parts += [(gettext("Alliance %(number)d: %(first)s–%(second)s", number=a.number,
                           first=a.countries[0], second=a.countries[1]), a.points)
                  for a in final.alliances]
        parts += [(gettext("Chains of monasteries"), by_part["chains"])]
        key = [(state.scores[s], result.pieces_left[s]) for s in state.seats]
        ranks = tuple(1 + sum(1 for other in key if other > key[s]) for s in state.seats)
        best = max(state.scores)
        leaders = [s for s in state.seats if state.scores[s] == best]
        tie_break = None
        if len(leaders) > 1:
            names = gettext(" and ").join(i18n.colour(state.players[s]) for s in leaders)
            pieces = ", ".join(f"{i18n.colour(state.players[s])} {result.pieces_left[s]}"
                               for s in leaders)
            if len(result.winners) == 1:
                tie_break = gettext(
                    "%(names)s tie with %(points)s; the rules give the win to whoever has more "
                    "pieces (monasteries and advisors) left in their supply (%(pieces)s), so "
                    "%(winner)s wins.", names=names, pieces=pieces,
                    points=ngettext("%(num)d point", "%(num)d points", best),
                    winner=i18n.colour(state.players[result.winners[0]]))
            else:
                tie_break = gettext(
                    "%(names)s tie with %(points)s and with the same number of pieces left in "
                    "their supply (%(pieces)s), which the rules use to break a tie, so they "
                    "share the win.", names=names, pieces=pieces,
                    points=ngettext("%(num)d point", "%(num)d points", best))
        notes = (
            gettext("In each country the player with the most monasteries scores a point for "
                    "every monastery there, the second a point for each monastery of the first, "
                    "the third for each of the second, and so on; tied players share a rank and "
                    "its points. This happened once when the deck first ran out (the "
                    "intermediate scoring) and again at the end."),
            gettext("An alliance scores, for each player with the most advisors in both of its "
                    "countries, a point for every advisor there; a chain of four or more of a "
                    "player's monasteries along the roads scores a point for each of them."),
        )
        return ResultTable(
            colours=state.players, parts=tuple(parts), totals=state.scores,
            tie_label=gettext("Pieces left (breaks a tie)"), tie_values=result.pieces_left,
            ranks=ranks, winners=result.winners, reason=i18n.render(result.reason), tie_break=tie_break,
            notes=notes, rules_url=RULES_URL)

    def card_words(self, codes) -> str:
        """'2 green cards (Bayern/Burgund), 1 red card (Franken/Aragon)' for card codes."""
        counts = Counter(codes)
        if not counts:
            return gettext("none")
        return ", ".join(ngettext("%(num)d %(colour)s card (%(countries)s)",
                                  "%(num)d %(colour)s cards (%(countries)s)", n,
                                  colour=i18n.colour(self.board.card(c).colour),
                                  countries=self.board.card(c).label)
                         for c, n in sorted(counts.items()))

    def position_lines(self, state: kk.GameState, seat: int | None,
                       countries: bool = True) -> list[str]:
        """The position as plain text for `seat`: what a mail or a turn file shows. Without
        `countries`, only the cards, scores and supplies (the HTML mail shows the board in a
        table and a picture instead)."""
        lines = []
        if seat is not None:
            view = kk.view_for(state, seat)
            lines.append(gettext("Your hand (%(colour)s): %(cards)s",
                                 colour=i18n.colour(cast(str, view.colour)),
                                 cards=self.card_words(view.hand)))
        return lines + list(self._public_lines(state, i18n.language(), countries))

    @functools.lru_cache(maxsize=64)  # noqa: B019 (one adapter per game, kept for good)
    def _public_lines(self, state: kk.GameState, language: str,
                      countries: bool) -> tuple[str, ...]:
        """What every reader's position lines say after their hand (a spectator's view), in
        `language` (the current one): the same for every seat of a game at one move, so made
        once for the mails of that move."""
        view = kk.view_for(state, None)
        players = view.players
        lines = []
        lines.append(gettext("Face-up cards: %(cards)s", cards=self.card_words(view.face_up)))
        deck = ngettext("%(num)d card", "%(num)d cards", view.deck_size)
        runs = (gettext("it has not run out yet") if view.exhaustions == 0 else
                ngettext("it has run out once (the intermediate scoring is done)",
                         "it has run out %(num)d times (the last round is being played)",
                         view.exhaustions))
        lines.append(gettext("Deck: %(deck)s; %(runs)s", deck=deck, runs=runs))
        lines.append(gettext("Scores: %(scores)s", scores=", ".join(
            f"{i18n.colour(p)} {s}" for p, s in zip(players, view.scores))))
        supplies = [gettext("%(colour)s %(monasteries)s, %(advisors)s", colour=i18n.colour(p),
                            monasteries=ngettext("%(num)d monastery", "%(num)d monasteries", m),
                            advisors=ngettext("%(num)d advisor", "%(num)d advisors", a))
                    for p, m, a in zip(players, view.monastery_supply, view.advisor_supply)]
        lines.append(gettext("Pieces left: %(supplies)s", supplies="; ".join(supplies)))
        if not countries:
            return tuple(lines)
        owners = dict(view.monasteries)
        empty = []
        for country, advisors in view.advisors:
            fields = [self.board.fields[f].name for f in self.board.country(country).fields]
            held = ", ".join(f"{f} ({i18n.colour(owners[f])})" for f in fields if f in owners)
            crest = ", ".join(f"{i18n.colour(players[s])} {n}" for s, n in enumerate(advisors)
                              if n)
            if not held and not crest:
                empty.append(country)
                continue
            lines.append(gettext("%(country)s: monasteries %(held)s; advisors %(crest)s",
                                 country=country, held=held or gettext("none"),
                                 crest=crest or gettext("none")))
        if empty:
            lines.append(gettext("No pieces yet in %(countries)s", countries=", ".join(empty)))
        return tuple(lines)

    def position_summary(self, state: kk.GameState, seat: int | None) -> list[str]:
        """The position without the countries: what the HTML mail lists above its picture and
        table of the board."""
        return self.position_lines(state, seat, countries=False)

    # --- the seat page's move form ----------------------------------------------------------

    def move_from_form(self, state: kk.GameState, form: Mapping[str, Any]) -> str:
        """The notation of the move a seat built in the form; MoveError says what is missing."""
        action = str(form.get("action", ""))
        if action == "text":
            text = str(form.get("notation", "")).strip()
            if not text:
                raise MoveError(gettext("type a move in the box, for example 'draw deck'"))
            return text[:MAX_NOTATION_LENGTH + 1]
        if action == "pass":
            return "pass"
        if action == "exchange":
            code = str(form.get("exchange", ""))
            if code not in {c.code for c in self.board.cards}:
                raise MoveError(gettext("choose the card to exchange"))
            return f"exchange {code}"
        if action == "draw":
            source = str(form.get("source", ""))
            if source != kk.DECK and source not in {c.code for c in self.board.cards}:
                raise MoveError(gettext("choose where to draw from: the deck or a face-up card"))
            return f"draw {source}"
        if action != "place":
            raise MoveError(gettext("choose what to do: place pieces, exchange a card, or pass"))
        cards = []
        for card in self.board.cards:
            raw = str(form.get(f"cards_{card.code}", "0") or "0").strip()
            if not (raw.isascii() and raw.isdigit()) or int(raw) > 3:
                raise MoveError(gettext("the number of %(colour)s cards must be 0, 1, 2 or 3",
                                        colour=i18n.colour(card.colour)))
            cards.extend([card.code] * int(raw))
        if not cards:
            raise MoveError(gettext("choose the cards to play: one to three"))
        country = str(form.get("country", ""))
        if country not in {c.name for c in self.board.countries}:
            raise MoveError(gettext("choose the country to place in"))
        pieces = []
        for key in ("piece1", "piece2"):
            piece = str(form.get(key, ""))
            if not piece:
                continue
            if piece != kk.ADVISOR and piece not in {f.name for f in self.board.fields}:
                raise MoveError(gettext("choose each piece from the list: an advisor or a cloister "
                                        "field"))
            pieces.append(piece)
        if not pieces:
            raise MoveError(gettext("choose what to place in %(country)s: a monastery on a free "
                                    "cloister field, or an advisor", country=country))
        return f"{''.join(sorted(cards))} {country}: {', '.join(pieces)}"
