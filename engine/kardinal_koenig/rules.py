"""The rules of a turn: which moves are legal, and the position each legal move leads to.

`legal_moves` is the one source of truth for what may be played; `apply_move` checks every
move it is given and raises `IllegalMoveError` with a reason a player can act on. Both are pure:
they read a `GameState` and return new values. Scoring arithmetic lives in `scoring`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from itertools import combinations
from typing import Any

from ..errors import IllegalMoveError, NotationError
from ..words import Phrase, colour, count, say, say_n
from .board import Board, Country, Field
from .moves import ADVISOR, DECK, Draw, Exchange, Move, Pass, Place, name_order, trusted_place
from .scoring import final_breakdown, intermediate_breakdown
from .state import DRAW, EMPTY, FACE_UP, HAND_SIZE, OVER, PLAY, GameState, shuffled

MAX_CARDS, MAX_PIECES = 3, 2


# --- what may be played ---------------------------------------------------------------------

def legal_moves(state: GameState) -> list[Move]:
    """Every legal move, in a stable order: placements, exchanges, draws, or the lone pass.

    Placements come by card combination (fewest cards first, then sorted codes), then country
    in board order, then pieces: one monastery (fields in board order), one advisor, two
    monasteries (pairs in name order), a monastery then an advisor, an advisor then a monastery,
    two advisors.
    """
    if state.phase == OVER:
        return []
    if state.phase == DRAW:
        moves: list[Move] = [Draw(DECK)] if state.deck else []
        moves.extend(Draw(code) for code in sorted(set(state.face_up)))
        return moves
    moves = [*_legal_places(state), *_legal_exchanges(state)]
    return moves or [Pass()]


def _legal_exchanges(state: GameState) -> list[Exchange]:
    if not (state.deck or state.face_up):
        return []
    return [Exchange(code) for code in sorted(set(state.hands[state.current]))]


@cache
def card_combinations(hand: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The distinct sets of 1 to 3 cards a hand can play."""
    found: set[Any] = set()
    for size in range(1, min(MAX_CARDS, len(hand)) + 1):
        found.update(combinations(sorted(hand), size))
    return tuple(sorted(found, key=lambda combo: (len(combo), combo)))


@cache
def pieces_options(cards: tuple[str, ...], country_card: str,
                   joker_anywhere: bool = False) -> tuple[int, ...]:
    """How many pieces `cards` may place in a country shown by `country_card` cards (may be none).

    A card showing the country places one piece; two cards of one colour that does not show it
    form a joker and place one piece together. Any other card would place nothing. With
    `joker_anywhere` (the English and Spanish books) a pair of the country's own colour may be
    played as a joker there too, so three such cards can place two pieces.
    """
    singles = sum(1 for c in cards if c == country_card)
    others = [c for c in cards if c != country_card]
    if others:
        return (singles + 1,) if len(others) == 2 and others[0] == others[1] else ()
    if joker_anywhere and singles >= 2:
        return (singles - 1, singles)
    return (singles,)


def stray_cards(cards: tuple[str, ...], country_card: str) -> list[str]:
    """The cards that can place no piece in a country shown by `country_card` cards: those that
    neither show it nor make a joker pair (one pair of one other colour is kept as the joker)."""
    others = sorted(c for c in cards if c != country_card)
    for code in sorted(set(others)):
        if others.count(code) >= 2:
            others.remove(code)
            others.remove(code)
            return others
    return others


def _legal_places(state: GameState) -> list[Place]:
    board, seat = state.board, state.current
    hand = state.hands[seat]
    monks, advs = state.monastery_supply[seat], state.advisor_supply[seat]
    if not hand or (monks == 0 and advs == 0):
        return []
    options = []  # per country: (one-piece options, two-piece options)
    for country in board.countries:
        counts = state.monastery_counts(country.index)
        free = [board.fields[f].name for f in state.free_fields(country.index)]
        most, placed = max(counts), sum(state.advisors[country.index])
        ones: list[tuple[str, ...]] = [(f,) for f in free] if monks else []
        twos: list[tuple[str, ...]] = []
        if most:  # someone has built here, so advisors and a second piece are possible
            if advs and placed < most:
                ones.append((ADVISOR,))
            if monks >= 2:  # pairs of monasteries, each pair in canonical order
                twos.extend(combinations(sorted(free, key=name_order), 2))
            if monks and advs:  # the monastery first: it may make room for the advisor
                cap_after = max(most, counts[seat] + 1)
                if placed + 1 <= cap_after:
                    twos.extend((f, ADVISOR) for f in free)
            if advs >= 2 and placed + 2 <= most:
                twos.append((ADVISOR, ADVISOR))
        options.append((country, ones, twos))
    moves = []
    known = _PLACES
    for cards in card_combinations(hand):
        for country, ones, twos in options:
            name = country.name
            for k in pieces_options(cards, country.card, state.joker_anywhere):
                if k not in (1, 2):
                    continue
                for pieces in ones if k == 1 else twos:
                    key = (cards, name, pieces)
                    move = known.get(key)
                    if move is None:
                        move = known[key] = trusted_place(cards, name, pieces)
                    moves.append(move)
    return moves


# Moves are immutable values and the same ones recur turn after turn, so legal_moves hands out
# one shared object per distinct placement instead of building it again (a board has a few
# thousand at most).
_PLACES: dict[tuple[Any, ...], Place] = {}


# --- checking a move ------------------------------------------------------------------------

def _card_words(board: Board, codes: Sequence[str]) -> Phrase:
    if not codes:
        return say("no cards")
    return say("%(cards)s", cards=[f"{c} ({board.card(c).label})" for c in codes])


def _check_place(state: GameState, move: Place) -> None:
    """Raise the first reason `move` cannot be played, checked in the order a player reads."""
    country = _check_place_names(state.board, move)
    _check_place_sizes(move)
    _check_hand(state, move)
    options = _check_cards_fit(state, move, country)
    _check_piece_count(move, country, options)
    counts = state.monastery_counts(country.index)
    if not any(counts):
        _check_first_piece(move, country)
    _check_pieces(state, move, country, counts)


def _check_place_names(board: Board, move: Place) -> Country:
    """The country the placement names, once its cards, country and pieces are text it knows."""
    if not isinstance(move.cards, tuple) or not all(isinstance(c, str) for c in move.cards) \
            or not isinstance(move.country, str) or not isinstance(move.pieces, tuple) \
            or not all(isinstance(p, str) for p in move.pieces):
        raise NotationError("a placement needs card codes, a country name and piece names as text")
    for code in move.cards:
        if code not in board.by_code:
            raise NotationError(f"{code!r} is not a card; the cards are "
                                + ", ".join(f"{c.code} ({c.label})" for c in board.cards))
    country = board.by_name.get(move.country)
    if not isinstance(country, Country):
        raise NotationError(f"{move.country!r} is not a country on this board; the countries are "
                            + ", ".join(c.name for c in board.countries))
    return country


def _check_place_sizes(move: Place) -> None:
    if not 1 <= len(move.cards) <= MAX_CARDS:
        raise IllegalMoveError(say("play 1 to %(most)d cards, not %(count)d", most=MAX_CARDS,
                                   count=len(move.cards)))
    if not 1 <= len(move.pieces) <= MAX_PIECES:
        raise IllegalMoveError(say("place 1 or 2 pieces a turn, not %(count)d",
                                   count=len(move.pieces)))


def _check_hand(state: GameState, move: Place) -> None:
    hand = list(state.hands[state.current])
    for code in move.cards:
        if code not in hand:
            raise IllegalMoveError(say("you do not hold the cards %(cards)s; your hand is "
                                       "%(hand)s", cards="".join(move.cards),
                                       hand=_card_words(state.board, state.hands[state.current])))
        hand.remove(code)


def _check_cards_fit(state: GameState, move: Place, country: Country) -> tuple[int, ...]:
    """How many pieces the cards may place in `country` (see `pieces_options`), never none."""
    options = pieces_options(move.cards, country.card, state.joker_anywhere)
    if not options:
        stray = stray_cards(move.cards, country.card)
        joker = [c for c in move.cards if c != country.card]
        for code in stray:
            joker.remove(code)
        kept = f" ({''.join(joker)} is a valid joker there)" if joker else ""
        raise IllegalMoveError(
            f"{_card_words(state.board, stray)} cannot place a piece in {country.name}{kept}: a "
            f"card places a piece only in a country it shows, and two cards of one colour make a "
            f"joker for {'any' if state.joker_anywhere else 'any other'} country")
    return options


def _check_piece_count(move: Place, country: Country, options: tuple[int, ...]) -> None:
    if min(options) > MAX_PIECES:
        paid = min(options)
        raise IllegalMoveError(f"{paid} cards showing {country.name} would place {paid} pieces, but "
                               f"a turn places at most {MAX_PIECES}; play fewer cards")
    if len(move.pieces) not in options:
        paid_one = options[-1] if len(options) == 1 else None
        placed_by = (f"place {count(paid_one, 'piece', 'pieces')}" if paid_one is not None else
                     f"place {' or '.join(str(k) for k in options if k <= MAX_PIECES)} pieces")
        raise IllegalMoveError(
            f"the cards {''.join(move.cards)} {placed_by} in "
            f"{country.name}, but you listed {len(move.pieces)}: each card showing the country "
            f"places one piece and each joker pair one piece, and no card may be played for nothing")


def _check_first_piece(move: Place, country: Country) -> None:
    """A country nobody has built in takes one piece this turn, a monastery."""
    if len(move.pieces) > 1:
        raise IllegalMoveError(say("nobody has built in %(country)s yet, so you may place "
                                   "only one piece there this turn, a monastery",
                                   country=country.name))
    if move.pieces[0] == ADVISOR:
        raise IllegalMoveError(say("%(country)s has no monastery yet, so no advisor may go "
                                   "there; the first piece in a country is a monastery",
                                   country=country.name))


def _check_pieces(state: GameState, move: Place, country: Country, counts: list[int]) -> None:
    """Each piece in turn, against the supply and the board as the pieces before it left them."""
    seat = state.current
    placed = sum(state.advisors[country.index])
    monks, advs = state.monastery_supply[seat], state.advisor_supply[seat]
    taken: set[int] = set()
    for piece in move.pieces:
        if piece == ADVISOR:
            _check_advisor(country, advs, placed, max(counts))
            placed += 1
            advs -= 1
            continue
        field = _check_monastery(state, country, piece, taken)
        if monks == 0:
            raise IllegalMoveError(say("you have no monasteries left in your supply"))
        taken.add(field.index)
        counts[seat] += 1
        monks -= 1


def _check_advisor(country: Country, advs: int, placed: int, most: int) -> None:
    if advs == 0:
        raise IllegalMoveError(say("you have no advisors left in your supply"))
    if placed + 1 > most:
        raise IllegalMoveError(say(
            "%(country)s already holds %(advisors)s, the most monasteries any player has "
            "there; an advisor needs one more monastery of a single player in "
            "%(country)s first", country=country.name,
            advisors=say_n("%(num)d advisor", "%(num)d advisors", placed)))


def _check_monastery(state: GameState, country: Country, piece: str, taken: set[int]) -> Field:
    """The free cloister field of `country` named `piece` (fields in `taken` are no longer free)."""
    board = state.board
    field = board.by_name.get(piece)
    if not isinstance(field, Field):
        raise NotationError(f"{piece!r} is not a cloister field on this board")
    if field.country != country.name:
        raise IllegalMoveError(say("%(field)s is in %(country)s, not in %(chosen)s; all "
                                   "pieces of a turn go to one country", field=field.name,
                                   country=field.country, chosen=country.name))
    holder = state.monasteries[field.index]
    if holder != EMPTY or field.index in taken:
        who = colour(state.players[holder]) if holder != EMPTY else say("you")
        free = [board.fields[f].name for f in state.free_fields(country.index) if f not in taken]
        if free:
            raise IllegalMoveError(say(
                "%(field)s already holds a monastery (%(who)s); only one monastery stands on "
                "a field; free in %(country)s: %(free)s", field=field.name, who=who,
                country=country.name, free=free))
        raise IllegalMoveError(say(
            "%(field)s already holds a monastery (%(who)s); only one monastery stands on a "
            "field, and %(country)s has no free cloister field", field=field.name, who=who,
            country=country.name))
    return field


def _check(state: GameState, move: Move) -> None:
    if not isinstance(move, (Place, Exchange, Draw, Pass)):
        raise NotationError(f"{move!r} is not a move")
    if state.phase == OVER:
        raise IllegalMoveError(say("the game is over; no more moves can be made"))
    if isinstance(move, Draw):
        _check_draw(state, move)
        return
    if state.phase == DRAW:
        raise IllegalMoveError(say_n("you have played this turn; now draw %(num)d more card "
                                     "(from the deck or a face-up card)",
                                     "you have played this turn; now draw %(num)d more cards "
                                     "(from the deck or a face-up card)", state.draws_left))
    if isinstance(move, Place):
        _check_place(state, move)
    elif isinstance(move, Exchange):
        _check_exchange(state, move)
    elif _legal_places(state) or _legal_exchanges(state):
        raise IllegalMoveError(say("you may pass only when you can neither place a piece nor "
                                   "exchange a card"))


def _check_draw(state: GameState, move: Draw) -> None:
    board = state.board
    if state.phase != DRAW:
        raise IllegalMoveError(say("there is nothing to draw now: first play cards or "
                                   "exchange one"))
    if move.source == DECK:
        if not state.deck:
            raise IllegalMoveError(say("the deck is empty; take a face-up card"))
    elif move.source not in board.by_code:
        raise NotationError(f"draw from 'deck' or a face-up card's code, not {move.source!r}")
    elif move.source not in state.face_up:
        said = say("no %(colour)s card lies face up; the face-up cards are %(cards)s",
                   colour=colour(board.card(move.source).colour),
                   cards=_card_words(board, state.face_up))
        if state.deck:
            said = say("%(reason)s; or draw from the deck", reason=said)
        raise IllegalMoveError(said)


def _check_exchange(state: GameState, move: Exchange) -> None:
    board, hand = state.board, state.hands[state.current]
    if move.card not in board.by_code:
        raise NotationError(f"{move.card!r} is not a card")
    if move.card not in hand:
        raise IllegalMoveError(say("you hold no %(colour)s card to exchange; your hand is "
                                   "%(hand)s", colour=colour(board.card(move.card).colour),
                                   hand=_card_words(board, hand)))
    if not (state.deck or state.face_up):
        raise IllegalMoveError(say("no card is left to draw, so no card can be exchanged"))


# --- making a move ----------------------------------------------------------------------------

class _Turn:
    """The parts of a state one move changes, as mutable copies, frozen again by `done`."""

    def __init__(self, state: GameState):
        self.s = state
        self.deck = list(state.deck)
        self.face_up = list(state.face_up)
        self.discard = list(state.discard)
        self.hands = [list(h) for h in state.hands]
        self.drawn = list(state.drawn)
        self.scores = list(state.scores)
        self.exhaustions = state.exhaustions
        self.last_seat = state.last_seat
        self.intermediate = state.intermediate
        self.phase, self.current, self.draws_left = state.phase, state.current, state.draws_left
        self.end_reason = state.end_reason
        self.changes: dict[str, Any] = {}

    def take_from_deck(self) -> str:
        card = self.deck.pop()
        if not self.deck:
            self.deck_ran_out()
        return card

    def deck_ran_out(self) -> None:
        s = self.s
        self.exhaustions += 1
        if self.exhaustions == 1:
            monasteries = self.changes.get("monasteries", s.monasteries)
            points = intermediate_breakdown(s.board, s.players, monasteries).totals()
            self.scores = [a + b for a, b in zip(self.scores, points)]
            self.intermediate = monasteries
            # The discard pile, not the face-up cards, becomes the new deck.
            self.deck = list(shuffled(self.discard, s.seed, "reshuffle"))
            self.discard = []
            if not self.deck:
                self.deck_ran_out()
        elif self.exhaustions == 2:
            self.last_seat = (s.start - 1) % len(s.players)

    def can_draw(self) -> bool:
        return bool(self.deck or self.face_up)

    def end_turn(self) -> None:
        while len(self.face_up) < FACE_UP and self.deck:
            self.face_up.append(self.take_from_deck())
        self.face_up.sort()
        self.draws_left = 0
        if self.last_seat is not None and self.current == self.last_seat:
            self.finish(say("the deck ran out a second time and the round is complete"))
        elif not anyone_can_place(self.frozen()):
            self.finish(say("no player can place a piece"))
        else:
            self.current = (self.current + 1) % len(self.s.players)
            self.phase = PLAY

    def finish(self, reason: str) -> None:
        s = self.s
        final = final_breakdown(s.board, s.players, self.changes.get("monasteries", s.monasteries),
                                self.changes.get("advisors", s.advisors)).totals()
        self.scores = [a + b for a, b in zip(self.scores, final)]
        self.phase, self.end_reason = OVER, reason

    def frozen(self, ply: int | None = None) -> GameState:
        return replace(
            self.s, deck=tuple(self.deck), face_up=tuple(self.face_up),
            discard=tuple(self.discard), hands=tuple(tuple(sorted(h)) for h in self.hands),
            drawn=tuple(self.drawn), scores=tuple(self.scores), exhaustions=self.exhaustions,
            last_seat=self.last_seat, intermediate=self.intermediate, phase=self.phase,
            current=self.current, draws_left=self.draws_left, end_reason=self.end_reason,
            ply=self.s.ply if ply is None else ply, **self.changes)

    def done(self) -> GameState:
        return self.frozen(self.s.ply + 1)


def anyone_can_place(state: GameState) -> bool:
    """Whether some seat could still place a piece somewhere, given the cards it needs."""
    free = EMPTY in state.monasteries
    room = any(state.advisor_room(c.index) > 0 for c in state.board.countries)
    return any((free and state.monastery_supply[s] > 0) or (room and state.advisor_supply[s] > 0)
               for s in state.seats)


def apply_move(state: GameState, move: Move) -> GameState:
    """The position after `move`; IllegalMoveError or NotationError if it cannot be played."""
    _check(state, move)
    seat = state.current
    turn = _Turn(state)
    if isinstance(move, Place):
        _place(state, move, turn)
    elif isinstance(move, Exchange):
        turn.hands[seat].remove(move.card)
        turn.discard.append(move.card)
        turn.drawn[seat] = ()
        turn.phase, turn.draws_left = DRAW, 1
    elif isinstance(move, Draw):
        if move.source == DECK:
            card = turn.take_from_deck()
            turn.drawn[seat] = turn.drawn[seat] + (card,)
        else:
            card = move.source
            turn.face_up.remove(card)
        turn.hands[seat].append(card)
        turn.draws_left -= 1
    else:
        turn.drawn[seat] = ()
        turn.end_turn()
        return turn.done()
    if turn.phase == DRAW and (turn.draws_left <= 0 or not turn.can_draw()):
        turn.end_turn()
    return turn.done()


def _place(state: GameState, move: Place, turn: _Turn) -> None:
    board, seat = state.board, state.current
    monasteries = list(state.monasteries)
    advisors = [list(a) for a in state.advisors]
    country = board.country(move.country)
    monks, advs = list(state.monastery_supply), list(state.advisor_supply)
    for piece in move.pieces:
        if piece == ADVISOR:
            advisors[country.index][seat] += 1
            advs[seat] -= 1
        else:
            monasteries[board.field_named(piece).index] = seat
            monks[seat] -= 1
    for code in move.cards:
        turn.hands[seat].remove(code)
        turn.discard.append(code)
    turn.changes.update(monasteries=tuple(monasteries), advisors=tuple(tuple(a) for a in advisors),
                        monastery_supply=tuple(monks), advisor_supply=tuple(advs))
    turn.drawn[seat] = ()
    turn.phase = DRAW
    turn.draws_left = HAND_SIZE - len(turn.hands[seat])
