"""Rules of thumb for Knights & Castles, fast enough to play whole games with, and what a
position is worth to each seat in gold.

The strong bot (`bots.strong`) plays its candidate moves out in positions dealt from its view;
its own seat in those play-outs moves by `policy_move`, which looks at the position once and
picks a move without trying any (no `apply_move` per candidate), and the bot ranks its
candidates by the same rules of thumb. Its judgement rests on a few estimates, all in gold:

- `turns_left`: about how many more tax phases each seat has (the deck over the cards a round
  draws);
- `plan`: the tableau a seat would have after building from its hand whatever can be
  supported, the card that earns most (or lets the hand build most) first; hand cards are worth
  the income they add to that plan, so two mines for one free village count once;
- `worth`: what a seat is likely to end the game with: its gold, the income in play and the
  income its hand plans for over the turns left, its events and advances, each weighed by a
  figure tuned by hand against the arena (`FEATURES` says what each weight multiplies). A
  finished game is worth its gold and nothing else.

The policy reads only what the seat to move may know (its hand, the public tableaus, gold and
hand sizes) when it chooses; `worth` reads every hand, since it scores positions dealt from a
view, whose hands are guesses.
"""

from __future__ import annotations

from ..cards import (
    ADVANCES,
    BUILDABLE,
    CARAVAN,
    CARTOGRAPHY,
    CASTLE,
    CITY,
    CROP_ROTATION,
    DISCARD_ONE,
    EVENT_CARDS,
    GROUP_OF,
    GROUPS,
    GUN_POWDER,
    INDEX,
    IRRIGATION,
    KINDS,
    KNIGHTS,
    MASONRY,
    PRINTING_PRESS,
    SCHOLASTICS,
    SHIPS,
    TRADE_ROUTE,
    VILLAGE,
    capacity,
    dp_of,
    revenue_of,
)
from ..moves import Abandon, Buy, Move, Pay, Play, Research, Share, War
from ..rules import ADVANCE_PRICE, CARD_PRICE, DECLINE, DONE, SHARE_PRICE, UPKEEP_PRICE, legal_moves
from ..state import (
    ANSWER,
    BUILD,
    BUY,
    END,
    EVENT,
    KEEP,
    LOSS,
    OVER,
    RESEARCH,
    TRADE,
    UPKEEP,
    GameState,
)

BUY_MOVE = Buy()
# Extra cards bought in a round, all seats together: they shorten the game too.
BUYS_PER_ROUND = 0.3
ARMOR = 0.1  # in choosing what to build first: a DP is worth a tenth of a gold of income
OTHER_RIVAL = 0.4  # harm done to a rival the table does not see ahead counts this much
# A margin is a seat's worth less this share of the best other seat's and the rest of the
# others' mean: with three rivals a gold taken from the leader is not a gold won (the next one
# may win instead), and counting it in full overrated war and disasters against building
# (docs/engine.md has the arena figures before and after).
RIVAL_MAX = 0.5
HOLD = 1.0  # times what a card held is worth (WEIGHTS): playing it must beat keeping it

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


def income(state: GameState, seat: int, tableau: tuple[int, ...] | list[int] | None = None
           ) -> int:
    """The gold a tax phase yields `seat` with `tableau` (its own by default)."""
    return revenue_of(state.tableau[seat] if tableau is None else tableau,
                      has(state, seat, CARTOGRAPHY), has(state, seat, CROP_ROTATION))


def card_income(kind: int, state: GameState, seat: int) -> float:
    """The gold a turn one more card of `kind` in play brings `seat` (with its advances)."""
    gain = KINDS[kind].revenue
    if kind == SHIPS and has(state, seat, CARTOGRAPHY):
        gain += 1
    elif kind == VILLAGE and has(state, seat, CROP_ROTATION):
        gain += 0.5
    return gain


def _room(t, group: int, irrigated: bool) -> int:
    return capacity(group, t, irrigated) - sum([t[k] for k in GROUPS[group][0]])


def has_room(state: GameState, seat: int, kind: int) -> bool:
    """Whether `seat`'s tableau in play could support one more card of `kind` now."""
    group = GROUP_OF.get(kind)
    return group is None or _room(state.tableau[seat], group, has(state, seat, IRRIGATION)) > 0


def best_build(t, hand, irrigated: bool, gains: list[float]) -> int | None:
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
    """What one more card of each kind in play earns `seat` a turn (`card_income` of each)."""
    return _GAINS[has(state, seat, CARTOGRAPHY), has(state, seat, CROP_ROTATION)]


def plan(state: GameState, seat: int, hand=None) -> tuple[list[int], list[int]]:
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


def free_support(t, irrigated: bool) -> int:
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


def dp_in_play(state: GameState, seat: int, tableau=None) -> int:
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


def public_worth(state: GameState, seat: int, turns: float) -> float:
    """What the table can see of `seat`'s prospects: gold and income in play."""
    return state.gold[seat] + WEIGHTS[1] * income(state, seat) * turns


# --- the policy ------------------------------------------------------------------------------

def policy_move(state: GameState) -> Move:
    """A sound move for the seat to move, by rules of thumb, from what that seat may know."""
    step = state.step
    moves = legal_moves(state)
    listed = moves.moves
    if len(listed) == 1 and not moves.spaces:
        return listed[0]
    seat = state.current
    if step == TRADE:
        return DONE
    if step == ANSWER:
        return DECLINE
    if step == LOSS:
        return least_loss(state, listed)
    turns = turns_left(state)
    if step == BUILD:
        k = best_build(state.tableau[seat], state.hands[seat], has(state, seat, IRRIGATION),
                       gains_of(state, seat))
        return DONE if k is None else _build_move(listed, k)
    if step == EVENT:
        return best_event(state, seat, listed, turns)[0]
    if step == BUY:
        return BUY_MOVE if buy_ends_it(state, seat) else DONE
    if step == RESEARCH:
        return _research(state, seat, listed, turns)
    if step == KEEP:  # keeping one card of the pair discards the other
        a, b = state.choice
        return max(listed, key=lambda m: (hand_gain(state, seat, b if INDEX[m.card] == a else a,
                                                    turns, -1), -INDEX[m.card]))
    if step == END:
        return max(listed, key=lambda m: (hand_gain(state, seat, INDEX[m.card], turns, -1),
                                          -INDEX[m.card]))
    if step == UPKEEP:
        return _upkeep(state, seat, listed, turns)
    return DONE


def _build_move(listed: list[Move], kind: int) -> Move:
    card = KINDS[kind].id
    for move in listed:
        if getattr(move, "card", None) == card and type(move) is not Share:
            return move
    raise AssertionError(f"build {card} is not listed")


def buy_ends_it(state: GameState, seat: int) -> bool:
    """Whether buying out the deck now ends the game with `seat` holding the most gold."""
    per_draw = 2 if has(state, seat, SCHOLASTICS) else 1
    needed = -(-len(state.deck) // per_draw)
    best_other = max(g for s, g in enumerate(state.gold) if s != seat)
    return state.gold[seat] - CARD_PRICE * needed > best_other


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


def advance_value(advance: int, state: GameState, seat: int, turns: float) -> float:
    """What the benefit of `advance` is worth to `seat` for the rest of the game, in gold."""
    t, _ = plan(state, seat)
    ahead = max(0.0, turns - 1)
    if advance == PRINTING_PRESS:
        return WEIGHTS[8] * ahead * ahead / 2
    if advance == SCHOLASTICS:
        return WEIGHTS[9] * ahead
    if advance == CARTOGRAPHY:
        return WEIGHTS[1] * (t[SHIPS] + 0.2) * ahead
    if advance == CROP_ROTATION:
        return WEIGHTS[1] * (t[VILLAGE] // 2 + 0.3) * ahead
    if advance == IRRIGATION:
        # Every 2 villages carry 3 cards: worth what the extra room lets the hand build.
        return WEIGHTS[10] * (t[VILLAGE] // 2) * ahead
    if advance == GUN_POWDER:
        return 0.05 * (t[KNIGHTS] + t[SHIPS]) * ahead
    if advance == MASONRY:
        return 0.05 * (t[CASTLE] + t[CITY]) * ahead
    return 0.0


def _research(state: GameState, seat: int, listed: list[Move], turns: float) -> Move:
    best, best_gain = DONE, 0.0
    for move in listed:
        kind = type(move)
        if kind is Research or kind is Share:
            price = ADVANCE_PRICE if kind is Research else SHARE_PRICE
            gain = advance_value(INDEX[move.card], state, seat, turns) - price
            if gain > best_gain:
                best, best_gain = move, gain
    return best


def harm(state: GameState, target: int, roll: float, turns: float) -> float:
    """Roughly what losing `roll` DP of its least earning cards costs `target`, in gold."""
    t = state.tableau[target]
    gp, ms = has(state, target, GUN_POWDER), has(state, target, MASONRY)
    cards = sorted((card_income(k, state, target), -dp_of(k, gp, ms), k)
                   for k in BUILDABLE for _ in range(t[k]) if dp_of(k, gp, ms) > 0)
    lost, covered = 0.0, 0
    for gain, minus_dp, _ in cards:
        if covered >= roll:
            break
        covered -= minus_dp
        lost += gain + 0.2
    return (WEIGHTS[1] * lost + WEIGHTS[12] * covered) * max(0.0, turns - 0.5)


def single_harm(state: GameState, target: int, kinds: tuple[int, ...], turns: float) -> float:
    """What discarding its best card of `kinds` costs `target`, in gold."""
    t = state.tableau[target]
    held = [k for k in kinds if t[k]]
    if not held:
        return 0.0
    worst = max(card_income(k, state, target) for k in held)
    if kinds == (SHIPS,) and t[TRADE_ROUTE] >= t[SHIPS]:
        worst += KINDS[TRADE_ROUTE].revenue  # the trade route it carried loses its support
    return WEIGHTS[1] * worst * max(0.0, turns - 0.5) + 0.5


def event_values(state: GameState, seat: int, listed: list[Move], turns: float
                 ) -> list[tuple[Move, float]]:
    """Each event move listed (not `done`) and what it is worth to the player, in gold: the
    harm to the rival it targets, in full for the rival the table sees furthest ahead."""
    seen = [float("-inf") if s == seat else public_worth(state, s, turns)
            for s in state.seats]
    top = max(seen)
    out = []
    for move in listed:
        kind = type(move)
        if kind is Play:
            k = INDEX[move.card]
            if k == CARAVAN:
                out.append((move, 3.5))
                continue
            target = state.players.index(move.target)
            weight = 1.0 if seen[target] >= top else OTHER_RIVAL
            if k in DISCARD_ONE:
                value = weight * single_harm(state, target, DISCARD_ONE[k], turns)
                value -= HOLD * WEIGHTS[6]
            else:
                value = weight * harm(state, target, 3.5, turns) - HOLD * WEIGHTS[4]
            out.append((move, value))
        elif kind is War:
            target = state.players.index(move.target)
            weight = 1.0 if seen[target] >= top else OTHER_RIVAL
            value = weight * harm(state, target, 3.5, turns)
            if not move.from_hand:
                value -= 0.5 * turns * 0.2 + 1  # its DP no longer covers losses of its own
            out.append((move, value))
    return out


def best_event(state: GameState, seat: int, listed: list[Move], turns: float
               ) -> tuple[Move, float]:
    """The event to play (or `done`) and what it is worth to the player, in gold."""
    best, best_value = DONE, 0.0
    for move, value in event_values(state, seat, listed, turns):
        if value > best_value:
            best, best_value = move, value
    return best, best_value


def least_loss(state: GameState, listed: list[Move]) -> Move:
    """The loss that costs the target least by `loss_cost`."""
    target = state.loss.target
    turns = turns_left(state)
    return min(listed, key=lambda m: (loss_cost(state, target, m.cards, turns), len(m.cards),
                                      str(m)))


def loss_cost(state: GameState, seat: int, cards: tuple[str, ...], turns: float) -> float:
    """What losing `cards` from play costs `seat`, in gold: the income lost, and for each card
    left without support the upkeep (1 gold a turn) or, where that is more than it and the
    cards it carries earn, what they earn."""
    t = list(state.tableau[seat])
    for c in cards:
        t[INDEX[c]] -= 1
    irrigated = has(state, seat, IRRIGATION)
    gains = gains_of(state, seat)
    per_turn = income(state, seat) - income(state, seat, t)
    for g, (kinds, _, _) in enumerate(GROUPS):
        extra = -_room(t, g, irrigated)
        if extra > 0:
            keep = sorted(min(UPKEEP_PRICE, gains[k] + _carried(t, k, gains))
                          for k in kinds for _ in range(t[k]))
            per_turn += sum(keep[:extra])
    return (WEIGHTS[1] * per_turn * max(0.0, turns) + 0.05 * len(cards)
            + WEIGHTS[10] * (free_support(state.tableau[seat], irrigated)
                             - free_support(t, irrigated)) * turns
            + WEIGHTS[12] * (dp_in_play(state, seat) - dp_in_play(state, seat, t)) * turns)


def _carried(t, kind: int, gains) -> float:
    """What the cards `kind` supports in tableau `t` earn, one of each kind it carries."""
    return sum(gains[x] for kinds, supporter, _ in GROUPS if supporter == kind
               for x in kinds if t[x])


def _upkeep(state: GameState, seat: int, listed: list[Move], turns: float) -> Move:
    """Pay for the unsupported card that earns the most, unless the one that earns least earns
    no more than its upkeep: give that one up."""
    t = state.tableau[seat]
    options: dict[int, dict[type, Move]] = {}
    for move in listed:
        if type(move) in (Abandon, Pay):
            options.setdefault(INDEX[move.card], {})[type(move)] = move

    def keep_value(k: int) -> float:
        value = card_income(k, state, seat)
        for kinds, supporter, _ in GROUPS:  # and what it carries
            if supporter == k:
                value += max((card_income(x, state, seat) for x in kinds if t[x]), default=0)
        return value

    ranked = sorted(options, key=keep_value)
    low = ranked[0]
    if keep_value(low) <= 1 or Pay not in options[low] or turns < 1:
        return options[low][Abandon]
    return options[ranked[-1]].get(Pay, options[ranked[-1]][Abandon])
