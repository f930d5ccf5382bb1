"""The board as an SVG picture, drawn from the board data alone: another board file, another map.

Pure functions, no I/O. `board_svg(board, view)` returns one `<svg>` element (no XML declaration)
for an HTML page. The picture holds nothing the view does not: a spectator's view has no hand.

How the map is made (`_layout`, cached per board, since a board never changes):
- fields are projected equirectangularly (longitude scaled by the cosine of the mean latitude)
  and fitted to a 1000-unit-wide viewBox;
- countries are a Voronoi partition of a coarse grid: each cell goes to the country of its
  nearest cloister field, cells farther than a cut-off from every field are sea, and so is a
  channel along the border of two countries that no road (and no land alliance) joins, so an
  island such as England stays an island; road corridors keep sparse countries in one piece;
- the cell borders are split into chains (one per pair of neighbours, ending where three meet),
  each simplified and smoothed once, so two countries share exactly the same border line;
- alliance squares sit on the border of their two countries (sea ones in the water between
  them, with a dashed line from coast to coast), crests on a free spot near the middle of their
  country, and each field's name where it hides the least.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ..words import Phrase, both, colour, say
from .board import Board, Country, Field
from .view import SeatView

Words = Callable[[Phrase], str]
"""Writes one of the picture's sentences for its reader (`str`: in English)."""


def say_list(items: list[Any], separator: str) -> Phrase:
    """Items joined by `separator` ("; "), each written for the reader."""
    joined: Phrase = items[0]
    for item in items[1:]:
        joined = say("%(first)s" + separator + "%(second)s", first=joined, second=item)
    return joined

SVG_NS = "http://www.w3.org/2000/svg"
WIDTH = 1000.0          # viewBox width; the height follows the board's shape
MAX_MAP_HEIGHT = 1100.0
MIN_MAP_HEIGHT = 420.0
PAD = 58.0              # room around the outermost fields for labels and crests
FIELD_R = 7.0           # a free cloister field
MONASTERY_R = 8.5
ALLIANCE = 19.0         # side of an alliance square
LABEL_SIZE = 11.0       # field names (px in the style below)
CREST_W, CREST_H = 24.0, 28.0

PLAYER_HEX = {
    "yellow": "#f2c12e", "red": "#d7352b", "green": "#2f9345", "purple": "#7d42a6",
    "blue": "#2a6fcb", "black": "#2b2b2b", "white": "#f7f7f7", "orange": "#ee8a22",
}
CARD_HEX = {
    "red": "#d9463e", "green": "#3d9a50", "cream": "#f3e7c6", "orange": "#f09236",
    "purple": "#8655b0", "yellow": "#f2cd3b", "blue": "#3b78c9", "white": "#fafafa",
    "black": "#363636", "brown": "#8b5a2b", "grey": "#9a9a9a", "gray": "#9a9a9a",
    "pink": "#f09ab8",
}
SEA_EDGE = "#9dbfd8"
COUNTRY_LIGHTNESS = 0.84  # a country is a light tint of its cards' colour: dark labels read well


# --- small helpers ----------------------------------------------------------------------------

def player_letter(colour: str) -> str:
    """The letter that marks a player's pieces beside their colour: "yellow" -> "Y"."""
    return colour[:1].upper()


def _hsl(h: float, s: float, lum: float) -> str:
    r, g, b = colorsys.hls_to_rgb((h % 360) / 360, lum, s)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _stable_hue(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:6], 16) % 360


@lru_cache(maxsize=256)
def _player_hex(colour: str) -> str:
    return PLAYER_HEX.get(colour.lower(), _hsl(_stable_hue(colour), 0.6, 0.45))


@lru_cache(maxsize=256)
def _card_hex(colour: str) -> str:
    return CARD_HEX.get(colour.lower(), _hsl(_stable_hue(colour), 0.55, 0.6))


@lru_cache(maxsize=256)
def _ink(hex_colour: str) -> str:
    """Dark or white text, whichever reads better on `hex_colour`."""
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    luminance = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "#1d1d1d" if luminance > 0.33 else "#ffffff"


def _country_colours(board: Board) -> tuple[tuple[str, str], ...]:
    """(fill, border) per country: a light tint of the colour of the cards that place pieces
    there, and a darker shade of it, so the map agrees with the cards in hand."""
    colours = []
    for country in board.countries:
        card = board.find_card(country.card)
        h, _lum, s = colorsys.rgb_to_hls(*_rgb(_card_hex(card.colour if card else country.card)))
        colours.append((_hsl(h * 360, s, COUNTRY_LIGHTNESS), _hsl(h * 360, min(s, 0.5), 0.36)))
    return tuple(colours)


def _rgb(hex_colour: str) -> tuple[float, float, float]:
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return r, g, b


def _n(value: float) -> str:
    """A coordinate: one decimal, no trailing ".0", never "-0"."""
    text = f"{value:.1f}".removesuffix(".0")
    return "0" if text == "-0" else text


def _text_width(text: str, size: float, bold: bool = False) -> float:
    return len(text) * size * (0.6 if bold else 0.55)


def _attrs(**attributes: object) -> str:
    """ attr="value" pairs, every value escaped; a trailing _ is dropped, _ becomes -."""
    out = []
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        name = key.rstrip("_").replace("_", "-")
        out.append(f" {name}={quoteattr(str(value))}")
    return "".join(out)


Box = tuple[float, float, float, float]
Point = tuple[float, float]


class _Space:
    """Boxes already taken on the picture, in a coarse spatial hash."""

    def __init__(self, bucket: float = 48.0) -> None:
        self.bucket = bucket
        self.boxes: list[tuple[Box, float]] = []
        self.index: dict[tuple[int, int], list[int]] = {}

    def _keys(self, box: Box) -> Iterable[tuple[int, int]]:
        b = self.bucket
        for i in range(math.floor(box[0] / b), math.floor(box[2] / b) + 1):
            for j in range(math.floor(box[1] / b), math.floor(box[3] / b) + 1):
                yield i, j

    def add(self, box: Box, weight: float = 1.0) -> None:
        self.boxes.append((box, weight))
        for key in self._keys(box):
            self.index.setdefault(key, []).append(len(self.boxes) - 1)

    def cost(self, box: Box) -> float:
        x0, y0, x1, y1 = box
        b = self.bucket
        seen: set[int] = set()
        total = 0.0
        boxes, index = self.boxes, self.index
        for i in range(math.floor(x0 / b), math.floor(x1 / b) + 1):
            for j in range(math.floor(y0 / b), math.floor(y1 / b) + 1):
                for k in index.get((i, j), ()):
                    (ox0, oy0, ox1, oy1), weight = boxes[k]
                    if ox0 < x1 and ox1 > x0 and oy0 < y1 and oy1 > y0 and k not in seen:
                        seen.add(k)
                        # conditional expressions, not min/max: this is the hot loop of a layout
                        w = (x1 if x1 < ox1 else ox1) - (x0 if x0 > ox0 else ox0)  # noqa: FURB136
                        h = (y1 if y1 < oy1 else oy1) - (y0 if y0 > oy0 else oy0)  # noqa: FURB136
                        total += w * h * weight
        return total


def _around(x: float, y: float, r: float) -> Box:
    return (x - r, y - r, x + r, y + r)


# --- geometry of a board (cached) -------------------------------------------------------------

@dataclass(frozen=True)
class _Alliance:
    x: float
    y: float
    link: tuple[tuple[float, float], ...]  # the dashed line of a sea alliance, else ()


@dataclass(frozen=True)
class _Layout:
    width: float
    map_height: float
    points: tuple[tuple[float, float], ...]          # field centres
    regions: tuple[str, ...]                          # path data, one per country
    colours: tuple[tuple[str, str], ...]              # fill and border, one per country
    crests: tuple[tuple[float, float], ...]           # shield centre, one per country
    labels: tuple[tuple[float, float, str], ...]      # x, y, text-anchor, one per field
    alliances: tuple[_Alliance, ...]


def _project(board: Board) -> tuple[list[tuple[float, float]], float]:
    lats = [f.lat for f in board.fields]
    k = math.cos(math.radians(sum(lats) / len(lats)))
    xs = [f.lon * k for f in board.fields]
    ys = [-f.lat for f in board.fields]
    x0, y0 = min(xs), min(ys)
    dx, dy = max(xs) - x0, max(ys) - y0
    if dx < 1e-9 and dy < 1e-9:
        scale = 1.0
    else:
        scale = min((WIDTH - 2 * PAD) / max(dx, 1e-9), (MAX_MAP_HEIGHT - 2 * PAD) / max(dy, 1e-9))
    height = max(dy * scale + 2 * PAD, MIN_MAP_HEIGHT)
    ox = (WIDTH - dx * scale) / 2
    oy = (height - dy * scale) / 2
    return [(ox + (x - x0) * scale, oy + (y - y0) * scale) for x, y in zip(xs, ys)], height


def _segment_distance(px: float, py: float, a: tuple[float, float],
                      b: tuple[float, float]) -> float:
    vx, vy = b[0] - a[0], b[1] - a[1]
    length2 = vx * vx + vy * vy
    t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((px - a[0]) * vx + (py - a[1]) * vy) / length2))
    return math.hypot(px - a[0] - t * vx, py - a[1] - t * vy)


def _median_spacing(points: list[Point]) -> float:
    """The median distance from a field to its nearest other field (120 for a lone field)."""
    if len(points) <= 1:
        return 120.0
    nearest = sorted(min(math.dist(p, q) for j, q in enumerate(points) if j != i)
                     for i, p in enumerate(points))
    return nearest[len(nearest) // 2]


def _joins(board: Board, points: list[Point], country_of: list[int]
           ) -> tuple[set[tuple[int, int]], list[tuple[Point, Point, int, int]]]:
    """The pairs of countries a road or a land alliance joins (each country with itself too),
    and the corridors that keep them joined: (one end, the other, their countries)."""
    joined = {(a, a) for a in range(len(board.countries))}
    for a, b in board.roads:
        ca, cb = country_of[a], country_of[b]
        joined |= {(ca, cb), (cb, ca)}
    corridors = [(points[a], points[b], country_of[a], country_of[b]) for a, b in board.roads]
    for alliance in board.alliances:
        ca, cb = (board.country(c).index for c in alliance.countries)
        if not alliance.sea:
            joined |= {(ca, cb), (cb, ca)}
            fa, fb = _nearest_pair(board, points, ca, cb)
            corridors.append((points[fa], points[fb], ca, cb))
    return joined, corridors


class _Grid:
    """Countries on a grid of square cells: owner[cell] is a country index, or -1 for sea."""

    def __init__(self, board: Board, points: list[tuple[float, float]], height: float) -> None:
        country_of = [board.country(f.country).index for f in board.fields]
        spacing = max(_median_spacing(points), 30.0)
        self.reach = reach = 2.0 * spacing          # land around a field
        self.channel = channel = 0.6 * spacing     # sea between countries no road joins
        self.s = s = max(WIDTH, height) / 90
        self.height = height
        self.x0 = self.y0 = -2 * s
        self.cols = int((WIDTH + 4 * s) / s) + 1
        self.rows = int((height + 4 * s) / s) + 1
        joined, corridors = _joins(board, points, country_of)
        best, best_k, second, second_k = self._nearest_two(points, country_of, reach + channel)
        owner = [-1] * (self.rows * self.cols)
        reach2 = reach * reach
        for i in range(len(owner)):
            k = best_k[i]
            if k < 0 or best[i] > reach2:
                continue
            other = second_k[i]
            if other >= 0 and (k, other) not in joined \
                    and math.sqrt(second[i]) - math.sqrt(best[i]) < channel:
                continue
            owner[i] = k
        self._dig_corridors(owner, corridors, best, 0.35 * reach, reach2)
        for (fx, fy), k in zip(points, country_of):  # a field's own cell is always its land
            owner[int((fy - self.y0) / s) * self.cols + int((fx - self.x0) / s)] = k
        self.owner = owner

    def _nearest_two(self, points: list[Point], country_of: list[int], outer: float
                     ) -> tuple[list[float], list[int], list[float], list[int]]:
        """Per cell, the squared distance to the nearest field within `outer` and its country,
        and the same for the nearest field of another country (math.inf and -1 for none)."""
        s, cols, rows = self.s, self.cols, self.rows
        size = rows * cols
        inf = math.inf
        best = [inf] * size
        best_k = [-1] * size
        second = [inf] * size
        second_k = [-1] * size
        for f, (fx, fy) in enumerate(points):
            k = country_of[f]
            across = [(self.x0 + (c + 0.5) * s - fx) ** 2 for c in range(cols)]
            r0 = max(0, int((fy - outer - self.y0) / s))
            r1 = min(rows - 1, int((fy + outer - self.y0) / s) + 1)
            for r in range(r0, r1 + 1):
                cy = self.y0 + (r + 0.5) * s - fy
                span2 = outer * outer - cy * cy
                if span2 < 0:
                    continue
                span = math.sqrt(span2)
                c0 = max(0, int((fx - span - self.x0) / s))
                c1 = min(cols - 1, int((fx + span - self.x0) / s) + 1)
                base = r * cols
                cy2 = cy * cy
                for c in range(c0, c1 + 1):
                    d2 = across[c] + cy2
                    i = base + c
                    if d2 < best[i]:
                        if k != best_k[i]:
                            second[i], second_k[i] = best[i], best_k[i]
                            best_k[i] = k
                        best[i] = d2
                    elif d2 < second[i] and k != best_k[i]:
                        second[i], second_k[i] = d2, k
        return best, best_k, second, second_k

    def _dig_corridors(self, owner: list[int], corridors: list[tuple[Point, Point, int, int]],
                       best: list[float], width: float, reach2: float) -> None:
        """Give the sea cells within `width` of a road (or land alliance) to the nearer end's
        country, so that a sparse country stays in one piece."""
        s, cols, rows = self.s, self.cols, self.rows
        for pa, pb, ka, kb in corridors:
            r0 = max(0, int((min(pa[1], pb[1]) - width - self.y0) / s))
            r1 = min(rows - 1, int((max(pa[1], pb[1]) + width - self.y0) / s) + 1)
            c0 = max(0, int((min(pa[0], pb[0]) - width - self.x0) / s))
            c1 = min(cols - 1, int((max(pa[0], pb[0]) + width - self.x0) / s) + 1)
            for r in range(r0, r1 + 1):
                py = self.y0 + (r + 0.5) * s
                for c in range(c0, c1 + 1):
                    i = r * cols + c
                    if owner[i] >= 0 or best[i] <= reach2:
                        continue
                    px = self.x0 + (c + 0.5) * s
                    if _segment_distance(px, py, pa, pb) <= width:
                        owner[i] = ka if math.dist((px, py), pa) <= math.dist((px, py), pb) else kb

    def at(self, x: float, y: float) -> int:
        c = int((x - self.x0) / self.s)
        r = int((y - self.y0) / self.s)
        if 0 <= r < self.rows and 0 <= c < self.cols:
            return self.owner[r * self.cols + c]
        return -1

    def chains(self) -> list[tuple[tuple[int, int], list[tuple[float, float]], bool]]:
        """The borders as chains: (pair of owners, smoothed points, closed?)."""
        width = self.cols + 1
        adjacency = _border_graph(self.owner, self.rows, self.cols)

        def point(node: int) -> tuple[float, float]:
            return (self.x0 + (node % width) * self.s, self.y0 + (node // width) * self.s)

        used: set[tuple[int, int]] = set()
        out = []
        tolerance = 0.9 * self.s
        for node in sorted(adjacency):
            if not _is_break(adjacency, node):
                continue
            for v, label in adjacency[node]:
                if (min(node, v), max(node, v)) in used:
                    continue
                nodes = _walk(adjacency, used, node, v)
                pts = _smooth(_simplify([point(p) for p in nodes], tolerance), closed=False)
                out.append((label, pts, False))
        for node in sorted(adjacency):  # what is left are closed loops
            for v, label in adjacency[node]:
                if (min(node, v), max(node, v)) in used:
                    continue
                nodes = _walk(adjacency, used, node, v)
                pts = [point(p) for p in nodes]
                if len(pts) > 16:  # small islands keep their every corner
                    pts = _simplify(pts, tolerance)
                out.append((label, _smooth(pts[:-1], closed=True), True))
        return out


_Borders = dict[int, list[tuple[int, tuple[int, int]]]]
"""Grid vertex (row * (cols + 1) + column) -> the border edges at it: (other end, the pair of
owners the edge parts, lower first)."""


def _border_graph(owner: list[int], rows: int, cols: int) -> _Borders:
    """Every cell edge between two owners (sea, -1, outside the grid), as a graph of vertices."""
    width = cols + 1
    adjacency: _Borders = {}

    def link(u: int, v: int, a: int, b: int) -> None:
        label = (a, b) if a < b else (b, a)
        adjacency.setdefault(u, []).append((v, label))
        adjacency.setdefault(v, []).append((u, label))

    for r in range(rows):
        row = owner[r * cols:(r + 1) * cols]
        above = owner[(r - 1) * cols:r * cols] if r else [-1] * cols
        left = -1
        for c in range(cols):
            here = row[c]
            if here != left:    # vertical edge at x = c
                link(r * width + c, (r + 1) * width + c, here, left)
            if here != above[c]:  # horizontal edge at y = r
                link(r * width + c, r * width + c + 1, here, above[c])
            left = here
        if left != -1:
            link(r * width + cols, (r + 1) * width + cols, left, -1)
    last = owner[(rows - 1) * cols:]
    for c in range(cols):
        if last[c] != -1:
            link(rows * width + c, rows * width + c + 1, last[c], -1)
    return adjacency


def _is_break(adjacency: _Borders, node: int) -> bool:
    """Whether a chain ends at `node`: three borders meet there, or two different ones."""
    edges = adjacency[node]
    return len(edges) != 2 or edges[0][1] != edges[1][1]


def _walk(adjacency: _Borders, used: set[tuple[int, int]], start: int, nxt: int) -> list[int]:
    """Grid vertices from `start` along one border until a junction (or back), each edge taken
    marked in `used`."""
    path = [start, nxt]
    used.add((min(start, nxt), max(start, nxt)))
    cur = nxt
    while cur != start and not _is_break(adjacency, cur):
        for v, _ in adjacency[cur]:
            key = (min(cur, v), max(cur, v))
            if key not in used:
                used.add(key)
                cur = v
                path.append(cur)
                break
        else:
            break
    return path


def _simplify(points: list[tuple[float, float]], tolerance: float) -> list[tuple[float, float]]:
    """Douglas-Peucker with both ends kept."""
    if len(points) < 3:
        return points
    keep = [False] * len(points)
    keep[0] = keep[-1] = True
    stack = [(0, len(points) - 1)]
    limit2 = tolerance * tolerance
    while stack:
        i, j = stack.pop()
        ax, ay = points[i]
        vx, vy = points[j][0] - ax, points[j][1] - ay
        length2 = vx * vx + vy * vy
        worst, at = -1.0, -1
        for m in range(i + 1, j):
            px, py = points[m][0] - ax, points[m][1] - ay
            if length2 == 0:
                d2 = px * px + py * py
            else:
                cross = px * vy - py * vx
                d2 = cross * cross / length2
            if d2 > worst:
                worst, at = d2, m
        if worst > limit2:
            keep[at] = True
            stack += [(i, at), (at, j)]
    return [p for p, k in zip(points, keep) if k]


def _smooth(points: list[tuple[float, float]], closed: bool,
            rounds: int = 2) -> list[tuple[float, float]]:
    """Chaikin corner cutting; an open chain keeps its two ends (where borders meet)."""
    for _ in range(rounds):
        n = len(points)
        if n < 3:
            return points
        out = [] if closed else [points[0]]
        for i in range(n if closed else n - 1):
            (ax, ay), (bx, by) = points[i], points[(i + 1) % n]
            out.append((0.75 * ax + 0.25 * bx, 0.75 * ay + 0.25 * by))
            out.append((0.25 * ax + 0.75 * bx, 0.25 * ay + 0.75 * by))
        if not closed:
            out.append(points[-1])
        points = out
    return points


def _nearest_pair(board: Board, points: Sequence[Point], ca: int, cb: int) -> tuple[int, int]:
    return min(((a, b) for a in board.countries[ca].fields for b in board.countries[cb].fields),
               key=lambda ab: (math.dist(points[ab[0]], points[ab[1]]), ab))


def _region_paths(board: Board, chains: Sequence[tuple[tuple[int, int], list[Point], bool]]
                  ) -> list[str]:
    """One path per country from the shared border chains (even-odd fill: holes stay holes)."""
    paths = []
    for k in range(len(board.countries)):
        mine = [(pts, closed) for label, pts, closed in chains if k in label]
        parts = []
        open_chains = [pts for pts, closed in mine if not closed]
        parts += [pts for pts, closed in mine if closed]
        ends: dict[tuple[float, float], list[int]] = {}
        for i, pts in enumerate(open_chains):
            ends.setdefault(pts[0], []).append(i)
            ends.setdefault(pts[-1], []).append(i)
        done = [False] * len(open_chains)
        for i in range(len(open_chains)):
            if done[i]:
                continue
            done[i] = True
            loop = list(open_chains[i])
            start = loop[0]
            while loop[-1] != start:
                for j in ends.get(loop[-1], ()):
                    if not done[j]:
                        done[j] = True
                        pts = open_chains[j]
                        loop += (pts if pts[0] == loop[-1] else pts[::-1])[1:]
                        break
                else:
                    break
            parts.append(loop[:-1] if loop[-1] == start else loop)
        paths.append(" ".join(
            "M" + " L".join(f"{_n(x)},{_n(y)}" for x, y in part) + "Z" for part in parts))
    return paths


def _crest_box(x: float, y: float, name: str) -> Box:
    half = max(_text_width(name, 12, True), 3 * 28) / 2 + 3
    return (x - half, y - CREST_H / 2 - 2, x + half, y + CREST_H / 2 + 34)


def _label_box(x: float, y: float, anchor: str, name: str) -> Box:
    w = _text_width(name, LABEL_SIZE) + 2
    left = x if anchor == "start" else x - w if anchor == "end" else x - w / 2
    return (left, y - LABEL_SIZE * 0.8, left + w, y + LABEL_SIZE * 0.25)


@lru_cache(maxsize=16)
def _layout(board: Board) -> _Layout:
    points, height = _project(board)
    grid = _Grid(board, points, height)
    chains = grid.chains()
    regions = _region_paths(board, chains)
    space = _Space()
    for x, y in points:
        space.add(_around(x, y, MONASTERY_R + 2), 40.0)
    for a, b in board.roads:
        (ax, ay), (bx, by) = points[a], points[b]
        steps = max(1, int(math.dist(points[a], points[b]) / 18))
        for t in range(1, steps):
            space.add(_around(ax + (bx - ax) * t / steps, ay + (by - ay) * t / steps, 3.5), 5.0)
    # In this order: each takes its room in `space` before the next is placed.
    alliances = _place_alliances(board, grid, points, chains, space)
    crests = [_place_crest(country, grid, points, space, height) for country in board.countries]
    labels = _place_labels(board, points, space, height)
    return _Layout(WIDTH, height, tuple(points), tuple(regions), _country_colours(board),
                   tuple(crests), tuple(labels), tuple(alliances))


def _place_alliances(board: Board, grid: _Grid, points: list[Point],
                     chains: list[tuple[tuple[int, int], list[Point], bool]],
                     space: _Space) -> list[_Alliance]:
    """Alliance squares: on the shared border, or in the water between the two countries."""
    index_of = {c.name: c.index for c in board.countries}
    alliances = []
    for alliance in board.alliances:
        ca, cb = (index_of[c] for c in alliance.countries)
        fa, fb = _nearest_pair(board, points, ca, cb)
        ideal = ((points[fa][0] + points[fb][0]) / 2, (points[fa][1] + points[fb][1]) / 2)
        pair = (min(ca, cb), max(ca, cb))
        if alliance.sea:
            spot = _sea_spot(board, grid, points, ca, cb, (fa, fb), space)
        else:
            spot = None
        if spot is None:
            candidates = [p for label, pts, _ in chains if label == pair for p in pts]
            candidates.sort(key=lambda p: (math.dist(p, ideal), p))
            spot = _first_free(candidates[:400], space, ALLIANCE / 2 + 1) or ideal
        link: tuple[tuple[float, float], ...] = ()
        if alliance.sea:
            link = (_coast(grid, spot, points, board.countries[ca].fields, ca), spot,
                    _coast(grid, spot, points, board.countries[cb].fields, cb))
        space.add(_around(spot[0], spot[1], ALLIANCE / 2 + 2), 60.0)
        alliances.append(_Alliance(spot[0], spot[1], link))
    return alliances


def _place_crest(country: Country, grid: _Grid, points: list[Point], space: _Space,
                 height: float) -> Point:
    """A crest: a free spot inside the country, near the middle of its fields."""
    xs = [points[f][0] for f in country.fields]
    ys = [points[f][1] for f in country.fields]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    s, cols, owner, k = grid.s, grid.cols, grid.owner, country.index
    near = []
    reach = grid.reach / 4
    for r in range(max(0, int((min(ys) - reach - grid.y0) / s)),
                   min(grid.rows, int((max(ys) + reach - grid.y0) / s) + 1)):
        y = grid.y0 + (r + 0.5) * s
        for c in range(max(0, int((min(xs) - reach - grid.x0) / s)),
                       min(cols, int((max(xs) + reach - grid.x0) / s) + 1)):
            if owner[r * cols + c] == k:
                x = grid.x0 + (c + 0.5) * s
                near.append(((x - mx) ** 2 + (y - my) ** 2, x, y))
    near.sort()
    best: tuple[float, float, float] | None = None
    for distance2, x, y in near[:120:3]:
        box = _crest_box(x, y, country.name)
        outside = sum(grid.at(px, py) != country.index
                      for px in (box[0], x, box[2]) for py in (box[1], y, box[3]))
        if box[0] < 4 or box[2] > WIDTH - 4 or box[1] < 4 or box[3] > height - 4:
            outside += 9
        score = space.cost(box) + 300 * outside + 0.04 * distance2
        if best is None or score < best[0]:
            best = (score, x, y)
    x, y = (mx, my) if best is None else best[1:]
    space.add(_crest_box(x, y, country.name), 30.0)
    return x, y


def _place_labels(board: Board, points: list[Point], space: _Space,
                  height: float) -> list[tuple[float, float, str]]:
    """Field names: the candidate place that covers the least, and never nearer another field."""
    order = sorted(range(len(points)), key=lambda f: (points[f][1], points[f][0]))
    placed: dict[int, tuple[float, float, str]] = {}
    gap = MONASTERY_R + 2.5
    for f in order:
        x, y = points[f]
        name = board.fields[f].name
        others = [p for g, p in enumerate(points)
                  if g != f and abs(p[0] - x) < 120 and abs(p[1] - y) < 40]
        options = [
            (x + gap, y + 3.5, "start"), (x - gap, y + 3.5, "end"),
            (x, y - gap - 1, "middle"), (x, y + gap + 8, "middle"),
            (x + gap - 2, y - gap + 2, "start"), (x - gap + 2, y - gap + 2, "end"),
            (x + gap - 2, y + gap + 6, "start"), (x - gap + 2, y + gap + 6, "end"),
        ]
        scored = []
        for rank, (lx, ly, anchor) in enumerate(options):
            box = _label_box(lx, ly, anchor, name)
            penalty = 0.0
            if box[0] < 2 or box[2] > WIDTH - 2 or box[1] < 2 or box[3] > height - 2:
                penalty += 5000
            own = _box_distance(box, x, y)
            penalty += sum(400 for ox, oy in others if _box_distance(box, ox, oy) < own)
            scored.append((space.cost(box) + penalty + rank * 3, rank, (lx, ly, anchor)))
        _, _, choice = min(scored)
        placed[f] = choice
        space.add(_label_box(*choice, name), 20.0)
    return [placed[f] for f in range(len(points))]


def _box_distance(box: Box, x: float, y: float) -> float:
    dx = max(box[0] - x, 0.0, x - box[2])
    dy = max(box[1] - y, 0.0, y - box[3])
    return math.hypot(dx, dy)


def _first_free(candidates: Iterable[Point], space: _Space, half: float) -> Point | None:
    best: tuple[float, Point] | None = None
    for p in candidates:
        cost = space.cost(_around(p[0], p[1], half))
        if cost == 0:
            return p
        if best is None or cost < best[0]:
            best = (cost, p)
    return None if best is None else best[1]


def _sea_spot(board: Board, grid: _Grid, points: Sequence[Point], ca: int, cb: int,
              pair: tuple[int, int],
              space: _Space) -> tuple[float, float] | None:
    """A spot in the water between countries ca and cb, as close to both as it can be."""
    fields_a = [points[f] for f in board.countries[ca].fields]
    fields_b = [points[f] for f in board.countries[cb].fields]
    (ax, ay), (bx, by) = points[pair[0]], points[pair[1]]
    s, cols, owner = grid.s, grid.cols, grid.owner
    margin = grid.reach
    c0 = max(1, int((min(ax, bx) - margin - grid.x0) / s))
    c1 = min(cols - 2, int((max(ax, bx) + margin - grid.x0) / s))
    r0 = max(1, int((min(ay, by) - margin - grid.y0) / s))
    r1 = min(grid.rows - 2, int((max(ay, by) + margin - grid.y0) / s))
    scored = []
    for r in range(r0, r1 + 1, 2):
        for c in range(c0, c1 + 1, 2):
            i = r * cols + c
            if owner[i] != -1 or owner[i - 1] != -1 or owner[i + 1] != -1 \
                    or owner[i - cols] != -1 or owner[i + cols] != -1:
                continue
            x, y = grid.x0 + (c + 0.5) * s, grid.y0 + (r + 0.5) * s
            if not (ALLIANCE < x < WIDTH - ALLIANCE and ALLIANCE < y < grid.height - ALLIANCE):
                continue
            da = min(math.dist((x, y), p) for p in fields_a)
            db = min(math.dist((x, y), p) for p in fields_b)
            scored.append((da + db + 0.5 * abs(da - db), x, y))
    scored.sort()
    return _first_free([(x, y) for _, x, y in scored[:200]], space, ALLIANCE / 2 + 1)


def _coast(grid: _Grid, spot: Point, points: Sequence[Point], fields: Iterable[int],
           k: int) -> Point:
    """Where the line from `spot` to the nearest field of country k first reaches its land."""
    target: Point = min((points[f] for f in fields), key=lambda p: (math.dist(p, spot), p))
    length = math.dist(spot, target)
    steps = max(1, int(length / (grid.s / 2)))
    for i in range(1, steps + 1):
        x = spot[0] + (target[0] - spot[0]) * i / steps
        y = spot[1] + (target[1] - spot[1]) * i / steps
        if grid.at(x, y) == k:
            extra = min(1.0, (i + 3) / steps)  # a little way onto the land
            return (spot[0] + (target[0] - spot[0]) * extra,
                    spot[1] + (target[1] - spot[1]) * extra)
    return target


# --- the picture ------------------------------------------------------------------------------

STYLE = """
.kk-board text{font-family:sans-serif;fill:#1d1d1d}
.kk-board .sea{fill:#cfe2f0}
.kk-board .country{stroke-width:1.6;stroke-linejoin:round}
.kk-board .road{stroke:#8c7b62;stroke-width:2.2;stroke-linecap:round}
.kk-board .dot{fill:#fffdf7;stroke:#4a4036;stroke-width:1.6}
.kk-board .monastery .dot{stroke:#1d1d1d;stroke-width:1.4}
.kk-board .mark{font-size:10px;font-weight:700;text-anchor:middle}
.kk-board .label{font-size:11px;paint-order:stroke;stroke:#fffdf7;stroke-width:3px;\
stroke-linejoin:round}
.kk-board .crest-name{font-size:12px;font-weight:700;text-anchor:middle;paint-order:stroke;\
stroke:#fffdf7;stroke-width:3px;stroke-linejoin:round}
.kk-board .shield{stroke:#3b3226;stroke-width:1.4}
.kk-board .advisor text{font-size:9.5px;font-weight:700;text-anchor:middle}
.kk-board .alliance rect{fill:#fffdf7;stroke:#3b3226;stroke-width:1.5}
.kk-board .alliance.sea rect{stroke:#1f5f8b}
.kk-board .alliance text{font-size:10.5px;font-weight:700;text-anchor:middle}
.kk-board .sea-link{fill:none;stroke:#1f5f8b;stroke-width:1.6;stroke-dasharray:5 4}
.kk-board .panel{fill:#f6f1e7}
.kk-board .new-ring{fill:none;stroke:#0b57d0;stroke-width:3.5;stroke-dasharray:6 3}
.kk-board .heading{font-size:13px;font-weight:700}
.kk-board .small{font-size:11px}
.kk-board .card rect{stroke:#3b3226;stroke-width:1.2}
.kk-board .card text{text-anchor:middle}
.kk-board .clickable{cursor:pointer}
.kk-board .clickable:hover .dot,.kk-board .clickable:focus .dot{stroke:#000;stroke-width:3.5}
.kk-board .clickable:hover .shield,.kk-board .clickable:focus .shield{stroke:#000;stroke-width:3}
.kk-board .clickable:focus{outline:none}
.kk-board .clickable:focus-visible .dot,.kk-board .clickable:focus-visible .shield\
{stroke:#0b57d0;stroke-width:4}
"""


def _id_prefix(board: Board, view: SeatView | None, interactive: bool) -> str:
    parts = [board.digest]
    if view is not None:
        parts += [str(view.seat), str(view.ply), ",".join(view.players)]
    parts.append(str(interactive))
    return "kk" + hashlib.sha256("|".join(parts).encode()).hexdigest()[:8]


def _shield(x: float, y: float) -> str:
    w, h = CREST_W / 2, CREST_H / 2
    return (f"M{_n(x - w)},{_n(y - h)} H{_n(x + w)} V{_n(y + h * 0.15)} "
            f"Q{_n(x + w)},{_n(y + h * 0.8)} {_n(x)},{_n(y + h)} "
            f"Q{_n(x - w)},{_n(y + h * 0.8)} {_n(x - w)},{_n(y + h * 0.15)} Z")


def _describe(board: Board, view: SeatView | None, words: Words) -> str:
    if view is None:
        return words(say("The map of %(board)s: %(countries)d countries, %(fields)d cloister "
                         "fields, %(roads)d roads and %(alliances)d alliances, %(sea)d of them "
                         "across the sea.", board=board.name, countries=len(board.countries),
                         fields=len(board.fields), roads=len(board.roads),
                         alliances=len(board.alliances),
                         sea=sum(a.sea for a in board.alliances)))
    sentences = [say("%(num)d players: %(colours)s.", num=len(view.players),
                     colours=[colour(c) for c in view.players])]
    if view.phase == "over":
        sentences.append(say("The game is over."))
    else:
        sentences.append(say("%(colour)s to move.", colour=colour(view.players[view.current])))
    owned: dict[str, list[str]] = {}
    for field_name, owner in view.monasteries:
        owned.setdefault(owner, []).append(field_name)
    if owned:
        sentences.append(say("Monasteries: %(list)s.", list=say_list(
            [say("%(colour)s at %(fields)s", colour=colour(c), fields=owned[c])
             for c in view.players if c in owned], "; ")))
    else:
        sentences.append(say("No monastery stands yet."))
    advisors = [say("%(country)s %(counts)s", country=country, counts=[
                    say("%(colour)s %(count)d", colour=colour(view.players[s]), count=n)
                    for s, n in enumerate(counts) if n])
                for country, counts in view.advisors if any(counts)]
    if advisors:
        sentences.append(say("Advisors: %(list)s.", list=say_list(advisors, "; ")))
    sentences.append(say("Scores: %(scores)s.", scores=[
        say("%(colour)s %(count)d", colour=colour(c), count=n)
        for c, n in zip(view.players, view.scores)]))
    sentences.append(say("Face-up cards: %(cards)s.", cards=[_card_name(board, c)
                                                            for c in view.face_up]
                         or say("none")))
    if view.hand is not None and view.colour is not None:
        sentences.append(say("Your hand (%(colour)s): %(cards)s.", colour=colour(view.colour),
                             cards=[_card_name(board, c) for c in view.hand] or say("empty")))
    written = [words(sentence) for sentence in sentences]
    return " ".join(text[:1].upper() + text[1:] for text in written)


def _card_name(board: Board, code: str) -> Phrase | str:
    card = board.find_card(code)
    return code if card is None else say("%(colour)s (%(countries)s)", colour=colour(card.colour),
                                         countries=card.label)


@dataclass(frozen=True)
class SvgOptions:
    """How `board_svg` draws a board, beside what it draws.

    `words` writes the picture's sentences (its description, labels and titles), each an
    `engine.words.Phrase`, in the reader's language (default: English). With `interactive`,
    free cloister fields and crests are focusable buttons carrying `data-field`/`data-country`
    and `data-crest`. `title` replaces the default title. `id_prefix` (default: derived from
    the board and view) keeps the ids of two pictures on one page apart. `marked` names
    cloister fields and countries (their crests) to ring as new, as a move's preview does.
    `room_below` leaves that much empty height under the map (where `board_pieces` draws a
    position's panel).
    """

    interactive: bool = False
    title: str | None = None
    id_prefix: str | None = None
    marked: Collection[str] = frozenset()
    words: Words = str
    room_below: float = 0.0


@dataclass(frozen=True)
class _Picture:
    """What every part of one `board_svg` picture is drawn from."""

    board: Board
    view: SeatView | None
    layout: _Layout
    prefix: str
    interactive: bool
    marked: frozenset[str]
    words: Words

    @property
    def players(self) -> tuple[str, ...]:
        return self.view.players if self.view is not None else ()


def board_svg(board: Board, view: SeatView | None = None,
              options: SvgOptions = SvgOptions()) -> str:
    """The board, and the position `view` shows if given, as one `<svg>` element, drawn as
    `options` says."""
    picture = _Picture(board, view, _layout(board),
                       options.id_prefix or _id_prefix(board, view, options.interactive),
                       options.interactive, frozenset(options.marked), options.words)
    out: list[str] = []
    _draw_head(out, picture, options)
    _draw_countries(out, picture)
    _draw_roads(out, picture)
    _draw_alliances(out, picture)
    _draw_crests(out, picture)
    _draw_fields(out, picture)
    if view is not None:
        _panel(out, board, view, picture.layout.map_height, picture.words)
    out.append("</svg>")
    return "\n".join(out)


def _draw_head(out: list[str], picture: _Picture, options: SvgOptions) -> None:
    """The `<svg>` element's opening, its title, description and style, and the sea."""
    board, view, prefix, words = picture.board, picture.view, picture.prefix, picture.words
    map_height = picture.layout.map_height
    height = map_height + _panel_height(view) + options.room_below
    title = options.title
    if title is None:
        title = board.name if view is None else words(say(
            "%(board)s, as %(who)s sees it", board=board.name,
            who=say("a spectator") if view.colour is None else say(view.colour)))
    add = out.append
    add(f'<svg xmlns="{SVG_NS}" viewBox="0 0 {_n(WIDTH)} {_n(height)}" class="kk-board"'
        f'{_attrs(role="group" if picture.interactive else "img", id=prefix)}'
        f' aria-labelledby="{prefix}-title {prefix}-desc">')
    add(f'<title id="{prefix}-title">{escape(title)}</title>')
    add(f'<desc id="{prefix}-desc">{escape(_describe(board, view, words))}</desc>')
    add(f"<style>{STYLE.strip()}</style>")
    add(f'<rect class="sea" x="0" y="0" width="{_n(WIDTH)}" height="{_n(map_height)}"/>')


def _draw_countries(out: list[str], picture: _Picture) -> None:
    # No clip path for the countries that reach past the map: the panel below is drawn over
    # them, and a clip made resvg render the whole map through a mask (a third of the time
    # of the mail's board picture).
    layout = picture.layout
    out.append('<g class="countries">')
    for country, d, (fill, edge) in zip(picture.board.countries, layout.regions, layout.colours):
        attrs = _attrs(id=f"{picture.prefix}-country-{country.index}", data_country=country.name)
        out.append(f'<path class="country"{attrs} d="{d}" fill="{fill}" stroke="{edge}"'
                   ' fill-rule="evenodd"/>')
    out.append("</g>")


def _draw_roads(out: list[str], picture: _Picture) -> None:
    board, pts = picture.board, picture.layout.points
    out.append('<g class="roads">')
    for a, b in board.roads:
        attrs = _attrs(data_from=board.fields[a].name, data_to=board.fields[b].name)
        out.append(f'<line class="road"{attrs} x1="{_n(pts[a][0])}" y1="{_n(pts[a][1])}"'
                   f' x2="{_n(pts[b][0])}" y2="{_n(pts[b][1])}"/>')
    out.append("</g>")


def _draw_alliances(out: list[str], picture: _Picture) -> None:
    """The alliance squares, after the dashed lines across the sea they lie under."""
    board, places, words = picture.board, picture.layout.alliances, picture.words
    out.append('<g class="alliances">')
    for alliance, place in zip(board.alliances, places):
        if place.link:
            line = " ".join(f"{_n(x)},{_n(y)}" for x, y in place.link)
            out.append(f'<polyline class="sea-link"{_attrs(data_alliance=alliance.number)}'
                       f' points="{line}"/>')
    for alliance, place in zip(board.alliances, places):
        kind = "alliance sea" if alliance.sea else "alliance"
        countries = both(list(alliance.countries))
        said = words(say("Alliance %(number)d: %(countries)s, across the sea",
                         number=alliance.number, countries=countries) if alliance.sea else
                     say("Alliance %(number)d: %(countries)s", number=alliance.number,
                         countries=countries))
        h = ALLIANCE / 2
        attrs = _attrs(class_=kind, id=f"{picture.prefix}-alliance-{alliance.number}",
                       data_alliance=alliance.number, data_countries="|".join(alliance.countries))
        out.append(f"<g{attrs}><title>{escape(said)}</title>"
                   f'<rect x="{_n(place.x - h)}" y="{_n(place.y - h)}" width="{_n(ALLIANCE)}"'
                   f' height="{_n(ALLIANCE)}" rx="2"/>'
                   f'<text x="{_n(place.x)}" y="{_n(place.y + 3.8)}">{alliance.number}</text></g>')
    out.append("</g>")


def _draw_crests(out: list[str], picture: _Picture) -> None:
    advisors = dict(picture.view.advisors) if picture.view is not None else {}
    out.append('<g class="crests">')
    for country, (x, y) in zip(picture.board.countries, picture.layout.crests):
        _draw_crest(out, picture, country, x, y, advisors.get(country.name, ()))
    out.append("</g>")


def _draw_crest(out: list[str], picture: _Picture, country: Country, x: float, y: float,
                counts: Sequence[int]) -> None:
    """One country's crest: its card's colour and letter, its name, and the advisors under it."""
    words, marked = picture.words, country.name in picture.marked
    card = picture.board.find_card(country.card)
    card_colour = card.colour if card else country.card
    placed = [(picture.players[s], n) for s, n in enumerate(counts) if n]
    said = words(say("%(country)s: shown by %(colour)s cards", country=country.name,
                     colour=say(card_colour)))
    if placed:
        said += words(say("; advisors: %(list)s", list=[
            say("%(colour)s %(count)d", colour=say(c), count=n) for c, n in placed]))
    extra = {}
    if picture.interactive:
        extra = {"tabindex": "0", "role": "button",
                 "aria_label": words(say("Place an advisor in %(country)s", country=country.name))}
    if marked:
        extra["data_new"] = "true"
        said += " " + words(say("(a new advisor)"))
    attrs = _attrs(class_="crest clickable" if picture.interactive else "crest",
                   id=f"{picture.prefix}-crest-{country.index}", data_crest=country.name, **extra)
    add = out.append
    add(f"<g{attrs}><title>{escape(said)}</title>")
    fill = _card_hex(card_colour)
    if marked:
        add(f'<circle class="new-ring" cx="{_n(x)}" cy="{_n(y)}" r="{_n(CREST_H * 0.8)}"/>')
    add(f'<path class="shield" d="{_shield(x, y)}" fill="{fill}"/>')
    add(f'<text class="mark" x="{_n(x)}" y="{_n(y + 2)}" fill="{_ink(fill)}"'
        f' style="fill:{_ink(fill)}">{escape(country.card)}</text>')
    add(f'<text class="crest-name" x="{_n(x)}" y="{_n(y + CREST_H / 2 + 13)}">'
        f"{escape(country.name)}</text>")
    if placed:
        add(_advisor_pills(x, y, placed)[1])
    add("</g>")


def _draw_fields(out: list[str], picture: _Picture) -> None:
    owner_of = dict(picture.view.monasteries) if picture.view is not None else {}
    layout = picture.layout
    out.append('<g class="fields">')
    for field, point, label in zip(picture.board.fields, layout.points, layout.labels):
        _draw_field(out, picture, field, point, label, owner_of.get(field.name))
    out.append("</g>")


def _draw_field(out: list[str], picture: _Picture, field: Field, point: tuple[float, float],
                label: tuple[float, float, str], owner: str | None) -> None:
    """One cloister field: its monastery (of `owner`) or a dot, and its name."""
    words, marked = picture.words, field.name in picture.marked
    (x, y), (lx, ly, anchor) = point, label
    attrs: dict[str, object] = {"id": f"{picture.prefix}-field-{field.index}",
                                "data_field": field.name, "data_country": field.country}
    if owner is not None:
        attrs["class_"] = "field monastery"
        attrs["data_owner"] = owner
        said = words(say("%(field)s (%(country)s): monastery of %(colour)s",
                         field=field.name, country=field.country, colour=say(owner)))
    else:
        attrs["class_"] = "field clickable" if picture.interactive else "field"
        if picture.interactive:
            attrs.update({"tabindex": "0", "role": "button",
                          "aria_label": words(say("Place a monastery at %(field)s (%(country)s)",
                                                  field=field.name, country=field.country))})
        said = words(say("%(field)s (%(country)s): free", field=field.name,
                         country=field.country))
    if marked:
        attrs["data_new"] = "true"
        said += " " + words(say("(new)"))
    add = out.append
    add(f"<g{_attrs(**attrs)}><title>{escape(said)}</title>")
    if marked:
        add(f'<circle class="new-ring" cx="{_n(x)}" cy="{_n(y)}" r="{_n(MONASTERY_R + 7)}"/>')
    if owner is not None:
        add(_monastery(x, y, owner))
    else:
        add(f'<circle class="dot" cx="{_n(x)}" cy="{_n(y)}" r="{_n(FIELD_R)}"/>')
    add(f'<text class="label" x="{_n(lx)}" y="{_n(ly)}"'
        f' text-anchor="{anchor}">{escape(field.name)}</text></g>')


def _advisor_pills(x: float, y: float, placed: list[tuple[str, int]]) -> tuple[Box, str]:
    """The advisors under the crest at (`x`, `y`): one pill per (colour, count); with the box
    they cover."""
    step = 28.0
    left = x - step * (len(placed) - 1) / 2
    ay = y + CREST_H / 2 + 25
    out = []
    for i, (player, n) in enumerate(placed):
        ax = left + i * step
        hexc = _player_hex(player)
        out.append(f'<g{_attrs(class_="advisor", data_colour=player, data_count=n)}>'
                   f'<rect x="{_n(ax - 12)}" y="{_n(ay - 7)}" width="24" height="14" rx="7"'
                   f' fill="{hexc}" stroke="#1d1d1d" stroke-width="1"/>'
                   f'<text x="{_n(ax)}" y="{_n(ay + 3.4)}" style="fill:{_ink(hexc)}">'
                   f"{escape(player_letter(player))}{n}</text></g>")
    return (left - 12, ay - 7, left + step * (len(placed) - 1) + 12, ay + 7), "\n".join(out)


def _monastery(x: float, y: float, colour: str) -> str:
    """The dot of `colour`'s monastery at (`x`, `y`), with the player's letter."""
    hexc = _player_hex(colour)
    return (f'<circle class="dot" cx="{_n(x)}" cy="{_n(y)}" r="{_n(MONASTERY_R)}"'
            f' style="fill:{hexc}"/>'
            f'<text class="mark" x="{_n(x)}" y="{_n(y + 3.5)}" style="fill:{_ink(hexc)}">'
            f"{escape(player_letter(colour))}</text>")


# --- a still picture in layers ------------------------------------------------------------------

Piece = tuple[int, int, int, int, str]
"""One piece of a still picture: its left and top pixel, its width and height in pixels, and
the `<svg>` that draws it (transparent around it) at that size."""

PIECE_MARGIN = 4.0  # viewBox units around a piece's box: strokes and anti-aliasing reach out


def board_pieces(board: Board, view: SeatView, pixels_per_unit: float,
                 words: Words = str) -> list[Piece]:
    """What a still picture of `view` draws over the bare board (`board_svg(board,
    room_below=panel_height(view))` rendered `pixels_per_unit` pixels a viewBox unit): the
    advisors, the monasteries and the panel of scores and cards, each as a small `<svg>` of its
    own, placed on whole pixels so that it draws each pixel as the whole picture does.

    A renderer that keeps the bare board of each size draws only these for a new position,
    and may keep each piece's pixels by its `<svg>`: the same piece (a monastery of a colour on
    a field, the same advisors under a crest, a score, a card in a slot) is the same text. No
    title or description goes with them (the whole picture is for pages, this is for pixels).
    """
    layout = _layout(board)
    pieces: list[tuple[Box, str]] = []
    advisors = dict(view.advisors)
    for country, (x, y) in zip(board.countries, layout.crests):
        placed = [(view.players[s], n) for s, n in enumerate(advisors.get(country.name, ())) if n]
        if placed:
            pieces.append(_advisor_pills(x, y, placed))
    owner_of = dict(view.monasteries)
    for field, (x, y), (lx, ly, anchor) in zip(board.fields, layout.points, layout.labels):
        colour = owner_of.get(field.name)
        if colour is None:
            continue
        dot = _around(x, y, MONASTERY_R + 1)
        label = _label_box(lx, ly, anchor, field.name)
        markup = _monastery(x, y, colour)
        box = dot
        if _overlap(dot, label):  # the name is drawn over the dot, as in the whole picture
            markup += (f'<text class="label" x="{_n(lx)}" y="{_n(ly)}"'
                       f' text-anchor="{anchor}">{escape(field.name)}</text>')
            box = (min(dot[0], label[0] - 4), min(dot[1], label[1] - 4),
                   max(dot[2], label[2] + 4), max(dot[3], label[3] + 4))
        pieces.append((box, f'<g class="field monastery">{markup}</g>'))
    # The panel: its ground with every heading, then each score and each card on their own.
    (ground, scores_heading), rows, cards = _panel_parts(board, view, layout.map_height, words)
    pieces.append(((0.0, layout.map_height, WIDTH, layout.map_height + _panel_height(view)),
                   ground + scores_heading + "".join(heading for heading, _, _ in cards)))
    pieces += rows
    for _, _, drawn_cards in cards:
        pieces += drawn_cards
    full_w = round(WIDTH * pixels_per_unit)
    full_h = math.ceil((layout.map_height + _panel_height(view)) * pixels_per_unit)
    drawn = []
    for (x0, y0, x1, y1), markup in pieces:
        left = max(0, math.floor((x0 - PIECE_MARGIN) * pixels_per_unit))
        top = max(0, math.floor((y0 - PIECE_MARGIN) * pixels_per_unit))
        right = min(full_w, math.ceil((x1 + PIECE_MARGIN) * pixels_per_unit))
        bottom = min(full_h, math.ceil((y1 + PIECE_MARGIN) * pixels_per_unit))
        # Exact, not _n's one decimal: a pixel edge must fall on a pixel edge.
        view_box = " ".join(f"{v / pixels_per_unit:.6f}".rstrip("0").rstrip(".")
                            for v in (left, top, right - left, bottom - top))
        drawn.append((left, top, right - left, bottom - top,
                      (f'<svg xmlns="{SVG_NS}" viewBox="{view_box}" class="kk-board">'
                       f"<style>{STYLE.strip()}</style>{markup}</svg>")))
    return drawn


def panel_height(view: SeatView | None) -> float:
    """The height of the panel of scores and cards under the map of `view` (viewBox units)."""
    return _panel_height(view)


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


# --- scores and cards under the map -----------------------------------------------------------

CARD_W, CARD_H = 66.0, 90.0


def _panel_height(view: SeatView | None) -> float:
    if view is None:
        return 0.0
    return max(46 + 24 * len(view.players), 48 + CARD_H + 16)


def _panel(out: list[str], board: Board, view: SeatView, top: float, words: Words) -> None:
    add = out.append
    frame, rows, cards = _panel_parts(board, view, top, words)
    add(f'<g class="status">{frame[0]}')
    add(f'<g class="scores">{frame[1]}')
    out.extend(markup for _, markup in rows)
    add("</g>")
    for heading, kind, drawn in cards:
        add(f'<g{_attrs(class_=f"cards {kind}")}>{heading}')
        out.extend(markup for _, markup in drawn)
        add("</g>")
    add("</g>")


def _panel_parts(board: Board, view: SeatView, top: float, words: Words
                 ) -> tuple[tuple[str, str], list[tuple[Box, str]],
                            list[tuple[str, str, list[tuple[Box, str]]]]]:
    """The panel in parts: (its ground, the scores' heading); each score's row with its box;
    and per row of cards (the face-up ones, the seat's own hand only in its own view) its
    heading, kind and cards with their boxes."""
    height = _panel_height(view)
    ground = (f'<rect class="panel" x="0" y="{_n(top)}" width="{_n(WIDTH)}"'
              f' height="{_n(height)}"/>\n'
              f'<line x1="0" y1="{_n(top)}" x2="{_n(WIDTH)}" y2="{_n(top)}" stroke="{SEA_EDGE}"'
              ' stroke-width="2"/>')
    title = words(say("Scores"))  # not inside the f-string: the extraction cannot see it there
    heading = f'<text class="heading" x="24" y="{_n(top + 26)}">{escape(title)}</text>'
    # Scores: one bar per player, with its letter and number.
    rows = []
    bar_left, bar_right = 150.0, 420.0
    most = max([10, *view.scores])
    for seat, (player, score) in enumerate(zip(view.players, view.scores)):
        y = top + 50 + 24 * seat
        hexc = _player_hex(player)
        length = (bar_right - bar_left) * score / most
        moving = seat == view.current and view.phase != "over"
        name = words(say("%(colour)s (to move)", colour=say(player)) if moving else say(player))
        weight = ' font-weight="700"' if moving else ""
        rows.append(((22.0, y - 14, bar_right + 8 + _text_width(str(score), 11, True), y + 6),
                     (f'<g{_attrs(class_="score", data_colour=player, data_score=score)}>'
                      f'<circle cx="32" cy="{_n(y - 4)}" r="9" fill="{hexc}" stroke="#1d1d1d"/>'
                      f'<text class="mark" x="32" y="{_n(y - 0.5)}" style="fill:{_ink(hexc)}">'
                      f"{escape(player_letter(player))}</text>"
                      f'<text class="small" x="48" y="{_n(y)}"{weight}>{escape(name)}</text>'
                      f'<rect x="{_n(bar_left)}" y="{_n(y - 11)}"'
                      f' width="{_n(bar_right - bar_left)}" height="14" fill="#e6ddcc" rx="3"/>'
                      f'<rect x="{_n(bar_left)}" y="{_n(y - 11)}" width="{_n(max(length, 0))}"'
                      f' height="14" fill="{hexc}" stroke="#1d1d1d" stroke-width="0.8" rx="3"/>'
                      f'<text class="small" x="{_n(bar_right + 8)}" y="{_n(y)}" font-weight="700">'
                      f"{score}</text></g>")))
    cards = []
    x, drawn = _cards(board, view.face_up, 480.0, top, words(say("Face-up cards")),
                      "face-up", words)
    cards.append((drawn[0], "face-up", drawn[1]))
    if view.hand is not None and view.colour is not None:
        _, drawn = _cards(board, view.hand, x + 30, top,
                          words(say("Your hand (%(colour)s)", colour=say(view.colour))), "hand",
                          words)
        cards.append((drawn[0], "hand", drawn[1]))
    return (ground, heading), rows, cards


def _cards(board: Board, codes: tuple[str, ...], x: float, top: float, heading: str,
           kind: str, words: Words = str) -> tuple[float, tuple[str, list[tuple[Box, str]]]]:
    """A row of cards from `x` under `heading`: where the next row may begin, and the heading
    (or "none" under it) and each card with its box."""
    title = f'<text class="heading" x="{_n(x)}" y="{_n(top + 26)}">{escape(heading)}</text>'
    if not codes:
        none = words(say("none"))
        title += f'\n<text class="small" x="{_n(x)}" y="{_n(top + 56)}">{escape(none)}</text>'
    drawn = []
    for i, code in enumerate(codes):
        card = board.find_card(code)
        colour = card.colour if card else code
        countries = card.countries if card else ()
        cx = x + i * (CARD_W + 8)
        fill = _card_hex(colour)
        ink = _ink(fill)
        colour_word = words(say(colour))
        markup = (f'<g{_attrs(class_=f"card {kind}", data_card=code)}>'
                  f'<rect x="{_n(cx)}" y="{_n(top + 38)}" width="{_n(CARD_W)}"'
                  f' height="{_n(CARD_H)}" rx="6" fill="{fill}"/>'
                  f'<text x="{_n(cx + CARD_W / 2)}" y="{_n(top + 56)}" font-size="12"'
                  f' font-weight="700" style="fill:{ink}">{escape(colour_word)}</text>')
        for j, name in enumerate(countries):
            size = min(10.5, (CARD_W - 6) / max(1, len(name)) / 0.55)
            markup += (f'\n<text x="{_n(cx + CARD_W / 2)}" y="{_n(top + 80 + 15 * j)}"'
                       f' font-size="{_n(size)}" style="fill:{ink}">{escape(name)}</text>')
        drawn.append(((cx, top + 38, cx + CARD_W, top + 38 + CARD_H), markup + "\n</g>"))
    return x + max(max(len(codes), 1) * (CARD_W + 8), _text_width(heading, 13, True)), \
        (title, drawn)
