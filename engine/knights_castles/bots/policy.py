"""What a Knights & Castles position is worth to each seat in gold, for the strong bot's offers.

The strong bot (`bots.strong`) chooses its moves by play-outs to the end of the game; its
offers it judges right after the answer (in a play-out the difference one trade makes drowns
in the luck of the draws), by these estimates, all in gold:

- `turns_left`: about how many more tax phases each seat has (the deck over the cards a round
  draws);
- `plan`: the tableau a seat would have after building from its hand whatever can be
  supported, the card that earns most (or lets the hand build most) first; hand cards are worth
  the income they add to that plan, so two mines for one free village count once
  (`hand_gain`);
- `worth`: what a seat is likely to end the game with: its gold, the income in play and the
  income its hand plans for over the turns left, its events and advances, each weighed by a
  figure checked against final gold (`FEATURES` says what each weight multiplies;
  `bench/kc_worth_fit.py` fits them). A finished game is worth its gold and nothing else.

`worth` reads every hand, since it scores positions dealt from a view, whose hands are guesses.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..cards import (
    ADVANCES,
    BUILDABLE,
    CARAVAN,
    CARTOGRAPHY,
    CROP_ROTATION,
    DISCARD_ONE,
    EVENT_CARDS,
    GROUP_OF,
    GROUPS,
    GUN_POWDER,
    IRRIGATION,
    KINDS,
    MASONRY,
    PRINTING_PRESS,
    SCHOLASTICS,
    SHIPS,
    VILLAGE,
    capacity,
    dp_of,
    revenue_of,
)
from ..state import (
    BUY,
    KEEP,
    OVER,
    GameState,
)

# Extra cards bought in a round, all seats together: they shorten the game too.
BUYS_PER_ROUND = 0.3
ARMOR = 0.1  # in choosing what to build first: a DP is worth a tenth of a gold of income
# A margin is a seat's worth less this share of the best other seat's and the rest of the
# others' mean: with three rivals a gold taken from the leader is not a gold won (the next one
# may win instead), and counting it in full overrated war and disasters against building
# (docs/engine.md has the arena figures before and after).
RIVAL_MAX = 0.5

# What the features of `features` are worth in final gold, tuned by hand against the arena
# (docs/engine.md): roughly a gold of income a turn for the turns left, less for income still
# in the hand, and a little for what the hand holds besides.
FEATURES = ("gold", "income x turns", "planned income x turns", "cards left x turns",
            "harm cards", "caravans", "single events", "advances in hand", "printing press",
            "scholastics", "free support x turns", "tax due", "DP in play x turns")
WEIGHTS = (1.0, 0.5, 0.27, 0.15, 1.5, 3.5, 0.5, 0.5, 0.2, 0.1, 0.35, 0.9, 0.0)


def turns_left(state: GameState) -> float:
    """About how many more tax phases each seat has: the deck over the cards a round draws."""
    per_round = BUYS_PER_ROUND
    for s in state.seats:
        draws = 1 + has(state, s, PRINTING_PRESS)
        if has(state, s, SCHOLASTICS):
            draws *= 2
        per_round += draws
    return len(state.deck) / per_round


def has(state: GameState, seat: int, advance: int) -> bool:
    """Whether `seat` has the benefit of `advance` (in play or shared)."""
    return state.tableau[seat][advance] > 0 or advance in state.shared[seat]


def income(state: GameState, seat: int, tableau: Sequence[int] | None = None) -> int:
    """The gold a tax phase yields `seat` with `tableau` (its own by default)."""
    return revenue_of(state.tableau[seat] if tableau is None else tableau,
                      has(state, seat, CARTOGRAPHY), has(state, seat, CROP_ROTATION))


def _room(t: Sequence[int], group: int, irrigated: bool) -> int:
    return capacity(group, t, irrigated) - sum([t[k] for k in GROUPS[group][0]])


def has_room(state: GameState, seat: int, kind: int) -> bool:
    """Whether `seat`'s tableau in play could support one more card of `kind` now."""
    group = GROUP_OF.get(kind)
    return group is None or _room(state.tableau[seat], group, has(state, seat, IRRIGATION)) > 0


def best_build(t: Sequence[int], hand: Sequence[int], irrigated: bool,
               gains: Sequence[float]) -> int | None:
    """The card of `hand` to build next onto tableau `t`: the one that earns most, counting for
    a supporter the best card of the hand it makes room for; None when nothing can be built.
    `gains[k]` is what a card of kind k earns a turn."""
    best, best_score = None, -1.0
    for k in BUILDABLE:
        if not hand[k]:
            continue
        group = GROUP_OF.get(k)
        if group is not None and _room(t, group, irrigated) <= 0:
            continue
        score = 10 * gains[k] + ARMOR * KINDS[k].dp
        for g, (kinds, supporter, _) in enumerate(GROUPS):
            if supporter == k:
                waiting = [gains[x] for x in kinds if hand[x] and x != k]
                if waiting and _room(t, g, irrigated) <= 0:
                    score += 10 * max(waiting) + 1
        if score > best_score:
            best, best_score = k, score
    return best


def _gains(cartography: bool, crop_rotation: bool) -> tuple[float, ...]:
    gains = [float(k.revenue) for k in KINDS]
    gains[SHIPS] += cartography
    gains[VILLAGE] += 0.5 * crop_rotation
    return tuple(gains)


_GAINS = {(c, r): _gains(c, r) for c in (False, True) for r in (False, True)}


def gains_of(state: GameState, seat: int) -> tuple[float, ...]:
    """What one more card of each kind in play earns `seat` a turn (with its advances)."""
    return _GAINS[has(state, seat, CARTOGRAPHY), has(state, seat, CROP_ROTATION)]


def plan(state: GameState, seat: int, hand: Sequence[int] | None = None
         ) -> tuple[list[int], list[int]]:
    """`seat`'s tableau after building from `hand` (its own by default) all that can be
    supported, best first, and the cards left in the hand."""
    t = list(state.tableau[seat])
    h = list(state.hands[seat] if hand is None else hand)
    irrigated = has(state, seat, IRRIGATION)
    gains = gains_of(state, seat)
    while True:
        k = best_build(t, h, irrigated, gains)
        if k is None:
            return t, h
        t[k] += 1
        h[k] -= 1


def free_support(t: Sequence[int], irrigated: bool) -> int:
    """Room in the tableau for cards that need support (towns, mines, castles, cities)."""
    return max(0, _room(t, 0, irrigated)) + max(0, _room(t, 1, irrigated))


def features(state: GameState, seat: int, turns: float) -> tuple[float, ...]:
    """The figures `worth` weighs for `seat` (see FEATURES)."""
    now = income(state, seat)
    planned, left = plan(state, seat)
    later = income(state, seat, planned)
    hand = state.hands[seat]
    harm = sum([hand[k] for k in EVENT_CARDS if k not in DISCARD_ONE and k != CARAVAN])
    single = sum([hand[k] for k in DISCARD_ONE])
    leftover = sum([left[k] for k in BUILDABLE])
    advances = sum([hand[a] for a in ADVANCES if not has(state, seat, a)])
    ahead = max(0.0, turns - 1)
    due = now if seat == state.current and state.step in (KEEP, BUY) else 0
    return (state.gold[seat], now * turns, (later - now) * ahead, leftover * ahead,
            min(harm, turns), hand[CARAVAN], single, min(advances, state.gold[seat] / 5 + 1),
            ahead * ahead / 2 if has(state, seat, PRINTING_PRESS) else 0.0,
            ahead if has(state, seat, SCHOLASTICS) else 0.0,
            free_support(planned, has(state, seat, IRRIGATION)) * ahead, due,
            dp_in_play(state, seat) * turns)


def dp_in_play(state: GameState, seat: int, tableau: Sequence[int] | None = None) -> int:
    """The DP of `seat`'s cards in play (or of `tableau`), with its advances."""
    t = state.tableau[seat] if tableau is None else tableau
    gp, ms = has(state, seat, GUN_POWDER), has(state, seat, MASONRY)
    return sum([dp_of(k, gp, ms) * t[k] for k in BUILDABLE if t[k]])


def worth(state: GameState, seat: int, turns: float | None = None) -> float:
    """What `seat` is likely to end the game with, in gold: its gold once the game is over."""
    if state.step == OVER:
        return float(state.gold[seat])
    turns = turns_left(state) if turns is None else turns
    return sum([w * f for w, f in zip(WEIGHTS, features(state, seat, turns))])


def margins(state: GameState) -> list[float]:
    """Each seat's worth less the others': `RIVAL_MAX` of the best other seat's, the rest of
    their mean (greedy weighs its rivals alike)."""
    turns = turns_left(state) if state.step != OVER else 0.0
    values = [worth(state, s, turns) for s in state.seats]
    out = []
    for s, v in enumerate(values):
        others = values[:s] + values[s + 1:]
        out.append(v - RIVAL_MAX * max(others) - (1 - RIVAL_MAX) * sum(others) / len(others))
    return out


def hand_gain(state: GameState, seat: int, kind: int, turns: float, change: int = 1) -> float:
    """How much one card of `kind` more (`change` 1) or less (-1) in `seat`'s hand changes
    what the hand is worth, in gold."""
    hand = list(state.hands[seat])
    before = _hand_worth(state, seat, hand, turns)
    hand[kind] += change
    return _hand_worth(state, seat, hand, turns) - before


def _hand_worth(state: GameState, seat: int, hand: list[int], turns: float) -> float:
    now = income(state, seat)
    planned, left = plan(state, seat, hand)
    ahead = max(0.0, turns - 1)
    harm = sum([hand[k] for k in EVENT_CARDS if k not in DISCARD_ONE and k != CARAVAN])
    return (WEIGHTS[2] * (income(state, seat, planned) - now) * ahead
            + WEIGHTS[3] * sum([left[k] for k in BUILDABLE]) * ahead
            + WEIGHTS[4] * min(harm, turns) + WEIGHTS[5] * hand[CARAVAN]
            + WEIGHTS[6] * sum([hand[k] for k in DISCARD_ONE])
            + WEIGHTS[7] * sum([hand[a] for a in ADVANCES if not has(state, seat, a)])
            + WEIGHTS[10] * free_support(planned, has(state, seat, IRRIGATION)) * ahead)
