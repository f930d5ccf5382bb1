"""Bots against bots: many seeded games, win rates with confidence intervals, move times.

`play_arena` seats the named bots of one game (its package's `bots`, found through
`engine.games`), one per seat, and plays `games` games. Game g
is dealt from the seed "<seed>:<g>" and rotates the seating by g places, so every bot sits in
every seat equally often and seat order does not favour anyone. Each bot is handed only the view
of the seat it plays (`view_for`) and a random input of its own seeded from the arena's seed, so
the results are the same for the same seed on any machine. Move times are measured for the
report only (no choice depends on them): the CPU time of this process, which is the time on one
core whatever else the machine runs, and the wall-clock time beside it.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .games import DEFAULT, NAMES, game_package

Z95 = 1.959963984540054


def wilson(wins: float, games: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a win rate (95% by default)."""
    if games == 0:
        return 0.0, 1.0
    p = wins / games
    denominator = 1 + z * z / games
    centre = (p + z * z / (2 * games)) / denominator
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class GameResult:
    """One arena game: which entry sat where, the scores and winners by entry."""

    number: int
    seating: tuple[int, ...]  # seating[seat] = index of the entry in the bots list
    scores: tuple[int, ...]  # by entry
    winners: tuple[int, ...]  # entries
    moves: int


@dataclass
class MoveTimes:
    count: int = 0
    total: float = 0.0
    worst: float = 0.0
    samples: list[float] = field(default_factory=list)
    wall_total: float = 0.0
    wall_worst: float = 0.0

    def add(self, seconds: float, wall: float) -> None:
        self.count += 1
        self.total += seconds
        self.worst = max(self.worst, seconds)
        self.samples.append(seconds)
        self.wall_total += wall
        self.wall_worst = max(self.wall_worst, wall)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def quantile(self, q: float) -> float:
        if not self.samples:
            return 0.0
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _package(game: str | ModuleType) -> ModuleType:
    return game if isinstance(game, ModuleType) else game_package(game)


def play_game(bots: list[str], seed: int | str, number: int,
              times: dict[str, MoveTimes] | None = None,
              game: str | ModuleType = DEFAULT) -> GameResult:
    """Play arena game `number` of `game`: entry i sits at seat (i - number) mod n."""
    rules = _package(game)
    n = len(bots)
    seating = tuple((s + number) % n for s in range(n))
    state = rules.new_game(n, f"{seed}:{number}")
    rngs = [random.Random(f"arena:{seed}:{number}:{entry}") for entry in range(n)]
    moves = 0
    while not state.is_over:
        seat = state.to_move
        entry = seating[seat]
        view = rules.view_for(state, seat)
        started, cpu = time.perf_counter(), time.process_time()
        move = rules.bots.choose_move(bots[entry], view, rngs[entry])
        if times is not None:
            times.setdefault(bots[entry], MoveTimes()).add(time.process_time() - cpu,
                                                           time.perf_counter() - started)
        state = rules.apply_move(state, move)
        moves += 1
    result = rules.outcome(state)
    scores = [0] * n
    for seat, points in enumerate(result.scores):
        scores[seating[seat]] = points
    return GameResult(number, seating, tuple(scores),
                      tuple(sorted(seating[s] for s in result.winners)), moves)


def play_arena(bots: list[str], games: int, seed: int | str,
               times: dict[str, MoveTimes] | None = None,
               game: str | ModuleType = DEFAULT) -> Iterator[GameResult]:
    """The results of games 0..games-1, in order."""
    rules = _package(game)
    for number in range(games):
        yield play_game(bots, seed, number, times, rules)


@dataclass(frozen=True)
class EntryReport:
    entry: int
    bot: str
    wins: float  # a win shared by k bots counts 1/k
    games: int
    mean_score: float

    @property
    def rate(self) -> float:
        return self.wins / self.games if self.games else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.wins, self.games)


def summarise(bots: list[str], results: list[GameResult]) -> list[EntryReport]:
    reports = []
    for entry, bot in enumerate(bots):
        wins = sum(1 / len(r.winners) for r in results if entry in r.winners)
        mean = sum(r.scores[entry] for r in results) / len(results) if results else 0.0
        reports.append(EntryReport(entry, bot, wins, len(results), mean))
    return reports


MAX_GAMES = 100_000


def arena_games() -> dict[str, ModuleType]:
    """The games that have computer players, by name."""
    packages = {name: game_package(name) for name in NAMES}
    return {name: p for name, p in packages.items() if getattr(p, "bots", None) is not None}


def run_arena(game: str, bots: str | list[str], games: int, seed: int | str) -> dict[str, Any]:
    """The whole arena as JSON-ready data; ValueError says what is wrong with the request."""
    playable = arena_games()
    if game not in playable:
        raise ValueError(f"unknown game {game!r}; the arena plays {', '.join(playable)}")
    rules = playable[game]
    BOT_NAMES, MIN_PLAYERS, MAX_PLAYERS = (rules.bots.BOT_NAMES, rules.MIN_PLAYERS,
                                           rules.MAX_PLAYERS)
    names = [b.strip() for b in bots.split(",")] if isinstance(bots, str) else list(bots)
    unknown = [b for b in names if b not in BOT_NAMES]
    if unknown:
        raise ValueError(f"unknown bot {unknown[0]!r}; the bots are {', '.join(BOT_NAMES)}")
    if not MIN_PLAYERS <= len(names) <= MAX_PLAYERS:
        raise ValueError(f"name one bot per seat, {MIN_PLAYERS} to {MAX_PLAYERS} of them, "
                         f"not {len(names)}")
    if isinstance(games, bool) or not isinstance(games, int) or not 0 < games <= MAX_GAMES:
        raise ValueError(f"play 1 to {MAX_GAMES} games, not {games}")
    times: dict[str, MoveTimes] = {}
    results = list(play_arena(names, games, seed, times, rules))
    return {
        "game": game,
        "title": rules.TITLE,
        "bots": names,
        "games": games,
        "seed": str(seed),
        "entries": [{"entry": r.entry, "bot": r.bot, "wins": r.wins, "win_rate": r.rate,
                     "ci95": list(r.interval), "mean_score": r.mean_score}
                    for r in summarise(names, results)],
        "mean_moves": sum(r.moves for r in results) / len(results),
        "move_seconds": {bot: {"moves": t.count, "mean": t.mean, "p95": t.quantile(0.95),
                               "p99": t.quantile(0.99), "max": t.worst,
                               "wall_mean": t.wall_total / t.count, "wall_max": t.wall_worst}
                         for bot, t in sorted(times.items())},
    }


def report_lines(report: dict[str, Any]) -> list[str]:
    """The arena's report for people."""
    lines = [(f"{report['title']} arena: {', '.join(report['bots'])}; {report['games']} "
              f"games, seed {report['seed']}; the seats rotate every game"),
             (f"{'#':>2}  {'bot':<8} {'wins':>7} {'win rate':>9}  {'95% CI (Wilson)':<17} "
              f"{'mean score':>10}")]
    for e in report["entries"]:
        low, high = e["ci95"]
        lines.append(f"{e['entry'] + 1:>2}  {e['bot']:<8} {e['wins']:>7.1f} "
                     f"{e['win_rate']:>8.1%}  {low:>6.1%} - {high:<6.1%}   "
                     f"{e['mean_score']:>10.1f}")
    lines.append("(a win shared by k bots counts 1/k)")
    lines.append(f"moves per game: {report['mean_moves']:.1f}; seconds per move, CPU time on "
                 f"one core (and the wall clock):")
    for bot, t in report["move_seconds"].items():
        lines.append(f"  {bot:<8} mean {t['mean']:.4f}  p95 {t['p95']:.4f}  p99 {t['p99']:.4f}  "
                     f"max {t['max']:.4f}  ({t['moves']} moves; wall mean {t['wall_mean']:.4f}, "
                     f"max {t['wall_max']:.4f})")
    return lines
