"""The rules of Knights & Castles: which moves are legal, and what a move does.

`legal_moves(state)` is the one source of truth: `apply_move` plays only what it lists, and
raises `IllegalMoveError` (with a reason a player can act on) for anything else. Offers are
the one kind of move too many to write out (any gold and hand cards for any gold and cards), so
`legal_moves` is a sequence that counts them and builds the i-th one on demand
(`LegalMoves`); membership is decided without building them all.

Automatic steps happen inside `apply_move`: the draws at the start of a turn, tax, dice, the
next turn. So does any decision with only one possible answer that everybody can know has one
(a loss that can be covered only one way, no gold to buy with): otherwise a seat is asked, even
with one answer, since answering for it would reveal its secret hand (see `_settle`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from math import comb
from typing import Any, cast

from ..errors import IllegalMoveError
from ..words import Phrase, colour, say, term
from .cards import (
    ADVANCES,
    BUILDABLE,
    CARAVAN,
    CARTOGRAPHY,
    CROP_ROTATION,
    DISASTER,
    DISCARD_ONE,
    EVENT_CARDS,
    GROUP_OF,
    GROUPS,
    GUN_POWDER,
    ID,
    INDEX,
    INVASION,
    IRRIGATION,
    KINDS,
    KNIGHTS,
    LEADERS,
    MASONRY,
    N_KINDS,
    PRINTING_PRESS,
    SCHOLASTICS,
    capacity,
    dp_of,
    excess,
    revenue_of,
    value,
)
from .moves import (
    COLOURS,
    Abandon,
    Accept,
    Build,
    Buy,
    Decline,
    Discard,
    Done,
    Keep,
    Lose,
    Move,
    Offer,
    Pay,
    Play,
    Research,
    Share,
    War,
)
from .state import (
    ANSWER,
    BUILD,
    BUY,
    END,
    EVENT,
    HAND_SIZE,
    KEEP,
    LOSS,
    OVER,
    RESEARCH,
    TRADE,
    UPKEEP,
    GameState,
    Loss,
    deal,
    roll,
)

CARD_PRICE = 5
ADVANCE_PRICE = 5
SHARE_PRICE = 10
UPKEEP_PRICE = 1
SHARE_STEPS = (BUY, BUILD, UPKEEP, RESEARCH, EVENT, TRADE)


# --- small helpers over count vectors --------------------------------------------------------

def replace(state: GameState, **changes: Any) -> GameState:
    """`dataclasses.replace` without re-running `__init__`: a copy with `changes`, several times
    faster, which whole-game benchmarks feel (the fields are already checked values)."""
    new = object.__new__(GameState)
    new.__dict__.update(state.__dict__)
    new.__dict__.update(changes)
    new.__dict__.pop("_legal", None)  # the cached legal moves belong to the old position
    return new


def _add(vec: tuple[int, ...], k: int, d: int) -> tuple[int, ...]:
    return vec[:k] + (vec[k] + d,) + vec[k + 1:]


def _put(tup: tuple[Any, ...], i: int, item: Any) -> tuple[Any, ...]:
    return tup[:i] + (item,) + tup[i + 1:]


def _counts(cards: Iterable[str]) -> dict[int, int]:
    out: dict[int, int] = {}
    for c in cards:
        k = INDEX[c]
        out[k] = out.get(k, 0) + 1
    return out


def _holds(vec: tuple[int, ...], cards: Iterable[str]) -> bool:
    return all(vec[k] >= n for k, n in _counts(cards).items())


def _irrigated(state: GameState, seat: int) -> bool:
    return state.has(seat, IRRIGATION)


def unsupported(state: GameState, seat: int) -> list[int]:
    """For each support group, how many of `seat`'s cards in play lack support now."""
    return excess(state.tableau[seat], _irrigated(state, seat), state.paid[seat])


def dp_total(state: GameState, seat: int) -> int:
    """The defence points of everything `seat` has in play."""
    gp, ms = state.has(seat, GUN_POWDER), state.has(seat, MASONRY)
    t = state.tableau[seat]
    return sum(dp_of(k, gp, ms) * t[k] for k in BUILDABLE)


def revenue(state: GameState, seat: int) -> int:
    """What `seat`'s next tax phase yields as things stand."""
    return revenue_of(state.tableau[seat], state.has(seat, CARTOGRAPHY),
                      state.has(seat, CROP_ROTATION))


# --- offers: counted, built on demand, checked directly -------------------------------------

class OfferSpace:
    """Every legal offer from the current seat to one opponent, in a fixed order.

    An offer gives a sub-multiset of the hand plus 0..gold gold, and asks for up to the
    target's hand size of cards of any kind plus 0..the target's gold gold; neither side may be
    empty ("gold and/or hand cards"). The target's hand is secret, so any cards may be asked
    for; accepting needs them.
    """

    __slots__ = (
        "ask_cards",
        "ask_gold",
        "ask_size",
        "colour",
        "give_size",
        "gold",
        "held",
        "size",
        "target",
    )

    def __init__(self, target: int, colour: str, held: list[tuple[int, int]], radix: int,
                 gold: int, ask_cards: int, ask_gold: int):
        """`held`: (kind, count) of the offerer's hand; `radix`: its number of sub-multisets."""
        self.target, self.colour, self.held = target, colour, held
        self.gold, self.ask_cards, self.ask_gold = gold, ask_cards, ask_gold
        self.give_size = radix * (gold + 1) - 1
        self.ask_size = _MULTISETS[ask_cards] * (ask_gold + 1) - 1
        self.size = self.give_size * self.ask_size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> Offer:
        g, a = divmod(i, self.ask_size)
        g += 1  # index 0 of each side is the empty side, which is left out
        a += 1
        give_gold, g = g % (self.gold + 1), g // (self.gold + 1)
        give = []
        for k, n in self.held:
            g, c = divmod(g, n + 1)
            give.extend([ID[k]] * c)
        ask_gold, a = a % (self.ask_gold + 1), a // (self.ask_gold + 1)
        return _offer(self.colour, give_gold, tuple(give), ask_gold,
                      _unrank_multiset(a, self.ask_cards))

    def __contains__(self, move: Offer) -> bool:
        if move.target != self.colour or not _known(move.give) or not _known(move.ask):
            return False
        if not (isinstance(move.give_gold, int) and isinstance(move.ask_gold, int)):
            return False
        held = dict(self.held)
        return (0 <= move.give_gold <= self.gold and 0 <= move.ask_gold <= self.ask_gold
                and all(held.get(k, 0) >= n for k, n in _counts(move.give).items())
                and len(move.ask) <= self.ask_cards
                and bool(move.give_gold or move.give) and bool(move.ask_gold or move.ask))


_COMB = [[comb(c, j) for c in range(N_KINDS + 110)] for j in range(108)]  # _COMB[j][c]
_MULTISETS = [comb(N_KINDS + h, h) for h in range(108)]  # multisets of at most h cards


def _offer(target: str, give_gold: int, give: tuple[str, ...], ask_gold: int,
           ask: tuple[str, ...]) -> Offer:
    """An `Offer` from sides already in card-list order, built without sorting them again."""
    move = object.__new__(Offer)
    for name, field in (("target", target), ("give_gold", give_gold), ("give", give),
                        ("ask_gold", ask_gold), ("ask", ask)):
        object.__setattr__(move, name, field)
    return move


def _known(cards: object) -> bool:
    return isinstance(cards, tuple) and all(c in INDEX for c in cards)


def _unrank_multiset(r: int, size: int) -> tuple[str, ...]:
    """The r-th multiset of at most `size` cards (combinatorial number system over `size`
    symbols from N_KINDS + 1, symbol 0 meaning no card; r = 0 is the empty multiset)."""
    picks = []
    for j in range(size, 0, -1):
        row = _COMB[j]  # C(c, j) grows with c from c = j - 1 on: the largest c with C(c, j) <= r
        c = bisect_right(row, r, j - 1) - 1
        r -= row[c]
        picks.append(c - (j - 1))  # from strictly increasing to non-decreasing symbols
    return tuple(ID[s - 1] for s in sorted(picks) if s)


class LegalMoves(Sequence[Move]):
    """The legal moves of a position in a fixed order: the ordinary ones (shares, then the
    step's own moves in card-list and seat order), then the offers, target by target.
    Supports len, indexing, iteration and `in`."""

    __slots__ = ("_built", "_len", "_set", "moves", "spaces")

    def __init__(self, moves: list[Move], spaces: Sequence[OfferSpace] = ()) -> None:
        self.moves = moves
        self.spaces = [s for s in spaces if s.size]
        self._set: set[Move] | None = None
        self._len = len(moves) + sum([s.size for s in self.spaces])
        self._built: Offer | None = None  # the latest offer built here: `in` knows it without checking

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i: int) -> Move:  # type: ignore[override]  # no slices
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("no legal move with that number")
        if i < len(self.moves):
            return self.moves[i]
        i -= len(self.moves)
        for space in self.spaces:
            if i < space.size:
                offer = self._built = space[i]
                return offer
            i -= space.size
        raise AssertionError("unreachable")

    def __iter__(self) -> Iterator[Move]:
        yield from self.moves
        for space in self.spaces:
            for i in range(len(space)):
                yield space[i]

    def __contains__(self, move: object) -> bool:
        # The moves a caller plays are mostly the very objects listed here: found by identity
        # first, which spares hashing them.
        for listed in self.moves:
            if listed is move:
                return True
        if isinstance(move, Offer):
            return move is self._built or any(move in s for s in self.spaces)
        if self._set is None:
            self._set = set(self.moves)
        try:
            return move in self._set
        except TypeError:  # an unhashable field: not a move we made
            return False

    def __repr__(self) -> str:
        return f"LegalMoves({self.moves!r} + {sum(map(len, self.spaces))} offers)"

    def offers_to(self) -> list[str]:
        """The colours an offer can go to now."""
        return [s.colour for s in self.spaces]


# --- legal moves ------------------------------------------------------------------------------

# Every move that names nothing but a card, a colour or nothing, made once: `legal_moves` lists
# these same objects, which spares building them in every position (they are immutable values).
DONE, BUY_CARD, ACCEPT, DECLINE = Done(), Buy(), Accept(), Decline()
KEEPS = tuple(Keep(card) for card in ID)
BUILDS = tuple(Build(card) for card in ID)
PAYS = tuple(Pay(card) for card in ID)
ABANDONS = tuple(Abandon(card) for card in ID)
RESEARCHES = tuple(Research(card) for card in ID)
SHARES = tuple(Share(card) for card in ID)
DISCARDS = tuple(Discard(card) for card in ID)
PLAYS = {(k, c): Play(ID[k], c) for k in EVENT_CARDS for c in (None, *COLOURS)}
WARS = {(c, from_hand): War(c, from_hand) for c in COLOURS for from_hand in (False, True)}


def _shares(state: GameState, seat: int) -> list[Move]:
    if state.gold[seat] < SHARE_PRICE:
        return []
    shared, tableau = state.shared[seat], state.tableau
    return [SHARES[a] for a in ADVANCES if not tableau[seat][a] and a not in shared
            and any(tableau[o][a] for o in state.seats if o != seat)]


def lost_dp(state: GameState, seat: int, cards: Sequence[str]) -> int:
    """The defence points `seat` gives up by losing `cards` from play (with its advances)."""
    gp, ms = state.has(seat, GUN_POWDER), state.has(seat, MASONRY)
    return sum(dp_of(INDEX[c], gp, ms) for c in cards)


def effect_on_target(state: GameState, move: Move) -> Phrase | None:
    """What a card played at an opponent (or an act of war) will do to its target, by the
    rules, said before the die is rolled (a preview): None for any other move."""
    if not isinstance(move, (Play, War)) or move.target not in state.players:
        return None
    target = state.players.index(move.target)
    who = colour(move.target)
    k = INDEX.get(move.card) if isinstance(move, Play) else None
    if k in DISCARD_ONE:
        kinds = DISCARD_ONE[k]
        what = say("leader") if kinds == LEADERS else _card_term(ID[kinds[0]])
        held = sum(state.tableau[target][x] for x in kinds)
        if not held:
            return say("%(who)s has no %(what)s in play, so the card takes nothing from it.",
                       who=who, what=what)
        return say("%(who)s must discard one %(what)s from play (it has %(count)d).",
                   who=who, what=what, count=held)
    if isinstance(move, War) or KINDS[cast(int, k)].type in (DISASTER, INVASION):
        dp = dp_total(state, target)
        if not dp:  # a card of 0 DP can always be left out
            return say("%(who)s has no card in play with defence points (DP), so it loses "
                       "nothing.", who=who)
        if dp <= 6:
            return say("A die is rolled: %(who)s must give up cards in play worth at least that "
                       "many defence points (DP), choosing which; it has %(dp)d DP in play, so "
                       "a roll of %(dp)d or more takes all of them.", who=who, dp=dp)
        return say("A die is rolled: %(who)s must give up cards in play worth at least that many "
                   "defence points (DP), choosing which (it has %(dp)d DP in play).", who=who,
                   dp=dp)
    return None


def loss_choices(state: GameState) -> list[Lose]:
    """The target's possible answers to the loss it must take."""
    loss = state.loss
    assert loss is not None, "a loss is chosen at the loss step"
    t = state.tableau[loss.target]
    if loss.kinds:
        options = [Lose((ID[k],)) for k in loss.kinds if t[k]]
        return options or [Lose(())]
    gp, ms = state.has(loss.target, GUN_POWDER), state.has(loss.target, MASONRY)
    items = [(k, dp_of(k, gp, ms), t[k]) for k in BUILDABLE if t[k]]
    if sum(dp * n for _, dp, n in items) < loss.roll:
        return [Lose(tuple(ID[k] for k, _, n in items for _ in range(n)))]  # loses everything
    items = [item for item in items if item[1] > 0]  # a 0-DP card could always be left out
    found: list[Lose] = []

    def cover(i: int, total: int, chosen: tuple[int, ...], smallest: int) -> None:
        if total >= loss.roll:
            if total - smallest < loss.roll:  # no card could be left out
                found.append(Lose(tuple(ID[k] for k in chosen)))
            return
        if i == len(items):
            return
        cover(i + 1, total, chosen, smallest)
        k, dp, n = items[i]
        for c in range(1, n + 1):
            cover(i + 1, total + dp * c, chosen + (k,) * c, min(smallest, dp))
            if total + dp * c >= loss.roll:
                break

    cover(0, 0, (), 99)
    return found


def legal_moves(state: GameState) -> LegalMoves:
    """Every legal move of the seat to move (`state.to_move`), in a stable order."""
    cached = state.__dict__.get("_legal")
    if cached is None:
        # A state never changes, so its legal moves are worked out once (outside the fields,
        # so equality and serialisation do not see them).
        cached = state.__dict__["_legal"] = _legal_moves(state)
    return cached


def _legal_moves(state: GameState) -> LegalMoves:
    return _LEGAL_BY_STEP[state.step](state)


# One small function per step: what the seat to move (`state.current`) may play there. The
# steps where an advance can be shared list the shares first.

def _legal_over(state: GameState) -> LegalMoves:
    return LegalMoves([])


def _legal_trade(state: GameState) -> LegalMoves:
    seat = state.current
    moves = _shares(state, seat)
    moves.append(DONE)
    held, radix = [], 1
    for k, n in enumerate(state.hands[seat]):
        if n:
            held.append((k, n))
            radix *= n + 1
    players, hands, golds, offered = state.players, state.hands, state.gold, state.offered
    gold = golds[seat]
    spaces = [OfferSpace(o, players[o], held, radix, gold, sum(hands[o]), golds[o])
              for o in state.seats if o != seat and o not in offered]
    return LegalMoves(moves, spaces)


def _legal_answer(state: GameState) -> LegalMoves:
    offer = state.offer
    assert offer is not None
    target = state.players.index(offer.target)
    if state.gold[target] >= offer.ask_gold and _holds(state.hands[target], offer.ask):
        return LegalMoves([DECLINE, ACCEPT])
    return LegalMoves([DECLINE])


def _legal_build(state: GameState) -> LegalMoves:
    seat = state.current
    hand = state.hands[seat]
    moves = _shares(state, seat)
    moves.append(DONE)
    if any(hand[k] for k in BUILDABLE):
        t, irrigated = state.tableau[seat], _irrigated(state, seat)
        room = [capacity(g, t, irrigated) - sum([t[k] for k in kinds])
                for g, (kinds, _, _) in enumerate(GROUPS)]
        moves.extend(BUILDS[k] for k in BUILDABLE
                     if hand[k] and (k not in GROUP_OF or room[GROUP_OF[k]] > 0))
    return LegalMoves(moves)


def _legal_event(state: GameState) -> LegalMoves:
    seat = state.current
    hand = state.hands[seat]
    moves = _shares(state, seat)
    moves.append(DONE)
    rivals = [c for o, c in enumerate(state.players) if o != seat]
    for k in EVENT_CARDS:
        if hand[k]:
            if k == CARAVAN:
                moves.append(PLAYS[k, None])
            else:
                moves.extend([PLAYS[k, c] for c in rivals])
    if state.tableau[seat][KNIGHTS]:
        moves.extend([WARS[c, False] for c in rivals])
    if hand[KNIGHTS] and "knights-from-hand" in state.variants:
        moves.extend([WARS[c, True] for c in rivals])
    return LegalMoves(moves)


def _legal_buy(state: GameState) -> LegalMoves:
    seat = state.current
    moves = _shares(state, seat)
    moves.append(DONE)
    if state.gold[seat] >= CARD_PRICE and "no-buying" not in state.variants:
        moves.append(BUY_CARD)
    return LegalMoves(moves)


def _legal_research(state: GameState) -> LegalMoves:
    seat = state.current
    hand = state.hands[seat]
    moves = _shares(state, seat)
    moves.append(DONE)
    if state.gold[seat] >= ADVANCE_PRICE:
        moves.extend([RESEARCHES[a] for a in ADVANCES if hand[a]])
    return LegalMoves(moves)


def _legal_end(state: GameState) -> LegalMoves:
    return LegalMoves([DISCARDS[k] for k, n in enumerate(state.hands[state.current]) if n])


def _legal_keep(state: GameState) -> LegalMoves:
    return LegalMoves([KEEPS[k] for k in sorted(set(state.choice))])


def _legal_loss(state: GameState) -> LegalMoves:
    return LegalMoves(list(loss_choices(state)))


def _legal_upkeep(state: GameState) -> LegalMoves:
    seat = state.current
    gold, t, paid = state.gold[seat], state.tableau[seat], state.paid[seat]
    moves = _shares(state, seat)
    for g, n in enumerate(unsupported(state, seat)):
        if n:
            for k in GROUPS[g][0]:
                if t[k] > paid.count(k):
                    moves.append(ABANDONS[k])
                    if gold >= UPKEEP_PRICE:
                        moves.append(PAYS[k])
    return LegalMoves(moves)


_LEGAL_BY_STEP: dict[str, Callable[[GameState], LegalMoves]] = {
    TRADE: _legal_trade, ANSWER: _legal_answer, BUILD: _legal_build, EVENT: _legal_event,
    BUY: _legal_buy, RESEARCH: _legal_research, END: _legal_end, KEEP: _legal_keep,
    LOSS: _legal_loss, UPKEEP: _legal_upkeep, OVER: _legal_over,
}


# --- applying ---------------------------------------------------------------------------------

def new_game(players: int | tuple[str, ...] | list[str], seed: int | str,
             variants: tuple[str, ...] | list[str] = (), start: int | None = None) -> GameState:
    """Deal, roll for the start seat (unless `start` is given) and play the automatic start
    of the first turn."""
    state = deal(players, seed, variants, start)
    return _settle(_start_turn(state, state.start, first=True))


def apply_move(state: GameState, move: Move) -> GameState:
    """The position after `move`; IllegalMoveError says why a move cannot be played now."""
    if state.step == OVER:
        raise IllegalMoveError(say("the game is over; no more moves can be played"))
    if move not in legal_moves(state):
        raise IllegalMoveError(why_illegal(state, move))
    after = _settle(_apply(state, move))
    # `_apply` always makes a new state, which nobody else holds yet: the move is counted in it
    # rather than in a copy (and the legal moves `_settle` cached for it stay, being the same).
    assert after is not state
    after.__dict__["ply"] = state.ply + 1
    return after


def _settle(state: GameState) -> GameState:
    """Play every decision that has only one possible answer, when everybody can know that.

    A decision whose having one answer depends on a secret hand is asked all the same: playing
    it at once would tell the table something about that hand (that it holds nothing to build,
    no advance, no event; that it lacks what an offer asks for; that a Scholastics pair or the
    cards over the hand limit are all alike).
    """
    while state.step not in (OVER, ANSWER, KEEP, END):
        moves = legal_moves(state)
        if len(moves) != 1 or not _public_answer(state):
            assert len(moves), f"no legal move at step {state.step}"
            return state
        state = _apply(state, moves[0])
    return state


def _public_answer(state: GameState) -> bool:
    """Whether any hand of the same size would leave the seat the same single answer."""
    cards = sum(state.hands[state.current])
    if state.step == BUILD:
        return cards == 0
    if state.step == RESEARCH:
        return cards == 0 or state.gold[state.current] < ADVANCE_PRICE
    if state.step == EVENT:
        return cards == 0
    return True  # buying, upkeep, losses and trades depend on public facts only


def _roll(state: GameState) -> tuple[int, GameState]:
    r = roll(state.seed, len(state.dice))
    return r, replace(state, dice=state.dice + (r,))


def _start_turn(state: GameState, seat: int, first: bool = False) -> GameState:
    n = 1 + state.has(seat, PRINTING_PRESS)
    if "catch-up" in state.variants and any(
            state.revenue[seat] < state.revenue[o] for o in state.seats if o != seat):
        n += 1
    state = replace(state, current=seat, turn=state.turn + (not first), offered=(),
                    draws_left=n, step=BUY)
    return _draw(state)


def _draw(state: GameState) -> GameState:
    """Make the draws still owed; the game ends the moment the deck is empty."""
    seat = state.current
    hand, deck, draws = state.hands[seat], state.deck, state.draws_left
    while draws:
        draws -= 1
        take = 2 if state.has(seat, SCHOLASTICS) else 1
        drawn, deck = deck[-take:], deck[:-take]
        for k in drawn:
            hand = _add(hand, k, 1)
        if not deck:
            return replace(state, hands=_put(state.hands, seat, hand), deck=deck, draws_left=0,
                           step=OVER)
        if take == 2:
            return replace(state, hands=_put(state.hands, seat, hand), deck=deck,
                           draws_left=draws, step=KEEP, choice=tuple(drawn))
    return replace(state, hands=_put(state.hands, seat, hand), deck=deck, draws_left=0, step=BUY)


def _after_upkeep(state: GameState) -> GameState:
    if any(unsupported(state, state.current)):
        return replace(state, step=UPKEEP)
    return replace(state, step=RESEARCH)


def _end_phase(state: GameState) -> GameState:
    if sum(state.hands[state.current]) > HAND_SIZE:
        return replace(state, step=END)
    return _start_turn(state, (state.current + 1) % len(state.players))


def _discard(state: GameState, where: str, seat: int, k: int) -> GameState:
    vecs = getattr(state, where)
    return replace(state, **{where: _put(vecs, seat, _add(vecs[seat], k, -1))},
                   discard=state.discard + (k,))


def _apply(state: GameState, move: Move) -> GameState:
    apply = _APPLY_BY_MOVE.get(type(move))
    if apply is None:
        raise AssertionError(f"unknown move {move!r}")
    return apply(state, move)


# One small function per kind of move, for a move `legal_moves` listed.

def _apply_done(state: GameState, move: Done) -> GameState:
    seat, step = state.current, state.step
    if step == BUY:  # tax, then the build phase
        r = revenue(state, seat)
        return replace(state, gold=_put(state.gold, seat, state.gold[seat] + r),
                       revenue=_put(state.revenue, seat, r), paid=_put(state.paid, seat, ()),
                       step=BUILD)
    if step == BUILD:
        return _after_upkeep(state)
    if step == RESEARCH:
        return replace(state, step=EVENT)
    if step == EVENT:
        return replace(state, step=TRADE)
    return _end_phase(state)  # TRADE


def _apply_buy(state: GameState, move: Buy) -> GameState:
    seat = state.current
    return _draw(replace(state, gold=_put(state.gold, seat, state.gold[seat] - CARD_PRICE),
                         draws_left=state.draws_left + 1))


def _apply_keep(state: GameState, move: Keep) -> GameState:
    k = INDEX[move.card]
    a, b = state.choice
    other = b if a == k else a
    return _draw(replace(_discard(state, "hands", state.current, other), choice=()))


def _apply_build(state: GameState, move: Build) -> GameState:
    seat, k = state.current, INDEX[move.card]
    return replace(state, hands=_put(state.hands, seat, _add(state.hands[seat], k, -1)),
                   tableau=_put(state.tableau, seat, _add(state.tableau[seat], k, 1)))


def _apply_pay(state: GameState, move: Pay) -> GameState:
    seat = state.current
    state = replace(state, gold=_put(state.gold, seat, state.gold[seat] - UPKEEP_PRICE),
                    paid=_put(state.paid, seat, state.paid[seat] + (INDEX[move.card],)))
    return _after_upkeep(state)


def _apply_abandon(state: GameState, move: Abandon) -> GameState:
    return _after_upkeep(_discard(state, "tableau", state.current, INDEX[move.card]))


def _apply_research(state: GameState, move: Research) -> GameState:
    seat, k = state.current, INDEX[move.card]
    return replace(state, hands=_put(state.hands, seat, _add(state.hands[seat], k, -1)),
                   tableau=_put(state.tableau, seat, _add(state.tableau[seat], k, 1)),
                   gold=_put(state.gold, seat, state.gold[seat] - ADVANCE_PRICE))


def _apply_share(state: GameState, move: Share) -> GameState:
    seat, step = state.current, state.step
    state = replace(state, gold=_put(state.gold, seat, state.gold[seat] - SHARE_PRICE),
                    shared=_put(state.shared, seat,
                                tuple(sorted(state.shared[seat] + (INDEX[move.card],)))))
    return _after_upkeep(state) if step == UPKEEP else state


def _apply_play(state: GameState, move: Play) -> GameState:
    seat, k = state.current, INDEX[move.card]
    state = _discard(state, "hands", seat, k)
    if k == CARAVAN:
        r, state = _roll(state)
        return replace(state, gold=_put(state.gold, seat, state.gold[seat] + r), step=TRADE)
    target = state.players.index(move.target)
    if k in DISCARD_ONE:
        return replace(state, step=LOSS, loss=Loss(target, seat, k, kinds=DISCARD_ONE[k]))
    r, state = _roll(state)
    return replace(state, step=LOSS, loss=Loss(target, seat, k, roll=r))


def _apply_war(state: GameState, move: War) -> GameState:
    seat = state.current
    state = _discard(state, "hands" if move.from_hand else "tableau", seat, KNIGHTS)
    r, state = _roll(state)
    return replace(state, step=LOSS,
                   loss=Loss(state.players.index(move.target), seat, KNIGHTS, roll=r))


def _apply_lose(state: GameState, move: Lose) -> GameState:
    assert state.loss is not None
    target = state.loss.target
    t = state.tableau[target]
    for c in move.cards:
        t = _add(t, INDEX[c], -1)
    return replace(state, tableau=_put(state.tableau, target, t),
                   discard=state.discard + tuple(INDEX[c] for c in move.cards),
                   loss=None, step=TRADE)


def _apply_offer(state: GameState, move: Offer) -> GameState:
    target = state.players.index(move.target)
    return replace(state, offer=move, offered=state.offered + (target,), step=ANSWER)


def _apply_decline(state: GameState, move: Decline) -> GameState:
    return replace(state, offer=None, step=TRADE)


def _apply_accept(state: GameState, move: Accept) -> GameState:
    seat, offer = state.current, state.offer
    assert offer is not None
    target = state.players.index(offer.target)
    hands, gold = list(state.hands), list(state.gold)
    for c in offer.give:
        hands[seat] = _add(hands[seat], INDEX[c], -1)
        hands[target] = _add(hands[target], INDEX[c], 1)
    for c in offer.ask:
        hands[target] = _add(hands[target], INDEX[c], -1)
        hands[seat] = _add(hands[seat], INDEX[c], 1)
    gold[seat] += offer.ask_gold - offer.give_gold
    gold[target] += offer.give_gold - offer.ask_gold
    return replace(state, hands=tuple(hands), gold=tuple(gold), offer=None, step=TRADE)


def _apply_discard(state: GameState, move: Discard) -> GameState:
    return _end_phase(_discard(state, "hands", state.current, INDEX[move.card]))


_APPLY_BY_MOVE: dict[type, Callable[[GameState, Any], GameState]] = {
    Done: _apply_done, Buy: _apply_buy, Keep: _apply_keep, Build: _apply_build, Pay: _apply_pay,
    Abandon: _apply_abandon, Research: _apply_research, Share: _apply_share, Play: _apply_play,
    War: _apply_war, Lose: _apply_lose, Offer: _apply_offer, Decline: _apply_decline,
    Accept: _apply_accept, Discard: _apply_discard,
}


# --- why a move is not legal ------------------------------------------------------------------

_STEP_ASKS = {
    KEEP: say("to keep one of the two cards Scholastics drew ('keep village')"),
    BUY: say("the draw phase: 'buy' a card for 5 gold or 'done'"),
    BUILD: say("the build phase: 'build village' and so on, or 'done'"),
    UPKEEP: say("to pay 1 gold for each unsupported card in play or abandon it ('pay town', "
                "'abandon town')"),
    RESEARCH: say("the research phase: 'research irrigation' (5 gold) or 'done'"),
    EVENT: say("the event phase: 'play plague at red', 'war at red' or 'done'"),
    LOSS: say("the target's choice of losses ('lose village, town')"),
    TRADE: say("the trade phase: 'offer red: 5 gold for town' or 'done'"),
    ANSWER: say("the answer to an offer: 'accept' or 'decline'"),
    END: say("the end phase: 'discard village' down to 7 cards"),
}
_MOVE_STEPS = {Keep: (KEEP,), Buy: (BUY,), Build: (BUILD,), Pay: (UPKEEP,), Abandon: (UPKEEP,),
               Research: (RESEARCH,), Share: SHARE_STEPS, Play: (EVENT,), War: (EVENT,),
               Lose: (LOSS,), Offer: (TRADE,), Accept: (ANSWER,), Decline: (ANSWER,),
               Discard: (END,), Done: (BUY, BUILD, RESEARCH, EVENT, TRADE)}


def _card_term(card: str) -> Phrase:
    """A card as the notation writes it ('village'), shown by a server as its printed name."""
    return term(card, KINDS[INDEX[card]].name)


def _opponents(state: GameState, seat: int) -> Phrase:
    return say("%(players)s", players=[colour(c) for c in state.players
                                       if c != state.players[seat]])


def why_illegal(state: GameState, move: object) -> Phrase:
    """A sentence saying why `move` cannot be played now and what can."""
    steps = _MOVE_STEPS.get(type(move))
    if steps is None:
        return say("%(move)s is not a Knights & Castles move", move=repr(move))
    if state.step not in steps:
        return _not_now(state, move)
    name = getattr(move, "card", None)
    if name is not None:
        k = INDEX.get(name) if isinstance(name, str) else None
        if k is None:
            return say("%(card)s is not a card", card=repr(name))
        if isinstance(move, (Build, Research, Discard, Play)) and not state.hands[state.current][k]:
            return say("there is no %(card)s in your hand", card=_card_term(name))
    why = _WHY_BY_MOVE.get(type(move))
    return (why(state, move) if why else None) or _not_now(state, move)


def _not_now(state: GameState, move: object) -> Phrase:
    now = say("now it is %(player)s's turn for %(asks)s",
              player=colour(state.players[state.current if state.to_move is None else state.to_move]),
              asks=_STEP_ASKS[state.step])
    return say("'%(move)s' cannot be played now; %(now)s", move=str(move), now=now)


# One small function per kind of move, for a move of the right step, naming a card that
# exists and, for a card played from the hand, is in it; None when it has nothing to add.

def _why_buy(state: GameState, move: Buy) -> Phrase:
    if "no-buying" in state.variants:
        return say("this game is played without buying cards (the no-buying variant)")
    return say("a card costs %(price)d gold and you have %(gold)d", price=CARD_PRICE,
               gold=state.gold[state.current])


def _why_build(state: GameState, move: Build) -> Phrase:
    kind, card = KINDS[INDEX[move.card]], _card_term(move.card)
    if kind.type not in ("resource", "leader"):
        return say("only resources and leaders are built; %(card)s is not one", card=card)
    return say("%(card)s would be unsupported: it needs a %(needs)s in play with room for it "
               "(see the support rules)", card=card, needs=_card_term(cast(str, kind.needs)))


def _why_research(state: GameState, move: Research) -> Phrase:
    if KINDS[INDEX[move.card]].type != "advance":
        return say("%(card)s is not an advance", card=_card_term(move.card))
    return say("an advance costs %(price)d gold and you have %(gold)d", price=ADVANCE_PRICE,
               gold=state.gold[state.current])


def _why_share(state: GameState, move: Share) -> Phrase:
    seat, k, card = state.current, INDEX[move.card], _card_term(move.card)
    if k not in ADVANCES:
        return say("%(card)s is not an advance", card=card)
    if state.has(seat, k):
        return say("you already have %(card)s", card=card)
    if not any(state.tableau[o][k] for o in state.seats if o != seat):
        return say("no other player has %(card)s in play", card=card)
    return say("sharing an advance costs %(price)d gold and you have %(gold)d",
               price=SHARE_PRICE, gold=state.gold[seat])


def _why_upkeep(state: GameState, move: Pay | Abandon) -> Phrase:
    return say("%(card)s is not one of your unsupported cards; legal now: %(moves)s",
               card=_card_term(move.card), moves=", ".join(map(str, legal_moves(state).moves)))


def _why_target(state: GameState, target: str | None) -> Phrase | None:
    if target not in state.players or target == state.players[state.current]:
        return say("name the opponent it targets: %(players)s",
                   players=_opponents(state, state.current))
    return None


def _why_play(state: GameState, move: Play) -> Phrase | None:
    k = INDEX[move.card]
    if k not in EVENT_CARDS:
        return say("%(card)s is not an event, disaster or invasion card",
                   card=_card_term(move.card))
    if k == CARAVAN:
        return say("Caravan targets yourself: write 'play caravan'")
    return _why_target(state, move.target)


def _why_war(state: GameState, move: War) -> Phrase:
    if (why := _why_target(state, move.target)) is not None:
        return why
    if not move.from_hand:
        return say("an act of war needs a knights card of yours in play")
    if "knights-from-hand" not in state.variants:
        return say("knights act of war only from play in this game ('war at red')")
    return say("there is no knights card in your hand")


def _why_lose(state: GameState, move: Lose) -> Phrase:
    choices = loss_choices(state)
    loss = state.loss
    assert loss is not None
    what = (say("%(roll)d DP", roll=loss.roll) if not loss.kinds else
            say("one %(cards)s", cards=_either([_card_term(ID[k]) for k in loss.kinds])))
    return say("'%(move)s' does not cover the loss of %(what)s exactly (cards in play, none "
               "that could be left out); choose one of: %(choices)s", move=str(move),
               what=what, choices="; ".join(map(str, choices[:8])))


def _why_offer(state: GameState, move: Offer) -> Phrase:
    seat = state.current
    gold = state.gold[seat]
    if move.target not in state.players or move.target == state.players[seat]:
        return say("offer a trade to an opponent: %(players)s", players=_opponents(state, seat))
    target = state.players.index(move.target)
    if target in state.offered:
        return say("you already made %(player)s an offer this turn", player=colour(move.target))
    if not (move.give_gold or move.give) or not (move.ask_gold or move.ask):
        return say("an offer gives something and asks for something")
    if move.give_gold > gold:
        return say("you have only %(gold)d gold", gold=gold)
    if not _holds(state.hands[seat], move.give):
        return say("you do not hold all the cards you offer")
    if move.ask_gold > state.gold[target]:
        return say("%(player)s has only %(gold)d gold", player=colour(move.target),
                   gold=state.gold[target])
    return say("%(player)s holds only %(count)d cards", player=colour(move.target),
               count=sum(state.hands[target]))


def _why_accept(state: GameState, move: Accept) -> Phrase:
    return say("you do not have all that the offer asks for; you can only 'decline'")


_WHY_BY_MOVE: dict[type, Callable[[GameState, Any], Phrase | None]] = {
    Buy: _why_buy, Build: _why_build, Research: _why_research, Share: _why_share,
    Pay: _why_upkeep, Abandon: _why_upkeep, Play: _why_play, War: _why_war, Lose: _why_lose,
    Offer: _why_offer, Accept: _why_accept,
}


def _either(items: list[Phrase]) -> Phrase:
    """'a', 'a or b', 'a or b or c'."""
    joined = items[0]
    for item in items[1:]:
        joined = say("%(first)s or %(second)s", first=joined, second=item)
    return joined


# --- the default move for a seat that missed its deadline ------------------------------------

def default_move(state: GameState) -> Move:
    """What the server plays for the seat to move when it misses its deadline (readings):
    nothing built, researched, played or offered; an offer declined; a loss covered by the
    cards of least revenue; the least valuable cards discarded or given up."""
    step = state.step
    moves = legal_moves(state).moves
    if step == KEEP:
        return Keep(ID[max(state.choice, key=value)])
    if step == ANSWER:
        return Decline()
    if step == LOSS:
        assert state.loss is not None
        gp, ms = state.has(state.loss.target, GUN_POWDER), state.has(state.loss.target, MASONRY)
        return min((m for m in moves if isinstance(m, Lose)),
                   key=lambda m: (sum(KINDS[INDEX[c]].revenue for c in m.cards),
                                  sum(dp_of(INDEX[c], gp, ms) for c in m.cards),
                                  len(m.cards), str(m)))
    if step == UPKEEP:
        return min((m for m in moves if isinstance(m, Abandon)), key=lambda m: value(INDEX[m.card]))
    if step == END:
        return min((m for m in moves if isinstance(m, Discard)), key=lambda m: value(INDEX[m.card]))
    return Done()
