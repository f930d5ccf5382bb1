"""The shipped board keeps every published fact; board files are validated before use."""

import tomllib
from pathlib import Path

import pytest

from engine import BoardError, default_board, load_board
from engine.kardinal_koenig.board import parse_board

DATA = Path(__file__).resolve().parent.parent.parent / "engine" / "kardinal_koenig" / "data" / "kardinal-koenig.toml"
BOARD = default_board()


def raw():
    return tomllib.loads(DATA.read_text("utf-8"))


def test_nine_countries_in_the_rule_books_scoring_order():
    """The outer ring clockwise (England, Franken, Bayern, Italien, Aragon), then the inner four."""
    assert [c.name for c in BOARD.countries] == [
        "England", "Franken", "Bayern", "Italien", "Aragon",
        "Frankreich", "Lothringen", "Schwaben", "Burgund"]


def test_cards_and_fields_as_published():
    """55 cards: 13 red, 12 green, 11 cream, 10 orange, 9 purple; Frankreich 8 fields, Schwaben 4."""
    assert {c.label: c.count for c in BOARD.cards} == {
        "Franken/Aragon": 13, "Bayern/Burgund": 12, "Lothringen/Italien": 11,
        "England/Schwaben": 10, "Frankreich": 9}
    sizes = {c.name: len(c.fields) for c in BOARD.countries}
    assert sizes["Frankreich"] == 8 and sizes["Schwaben"] == 4
    assert min(sizes.values()) == sizes["Schwaben"] and max(sizes.values()) == sizes["Frankreich"]
    assert len(BOARD.fields) == 54


def test_alliances_as_published():
    """15 alliances; 4 Frankreich-Aragon, 14 Italien-Burgund, 15 Italien-Bayern; 1, 2, 3, 5, 6, 15 by sea."""
    numbers = {a.number: a for a in BOARD.alliances}
    assert sorted(numbers) == list(range(1, 16))
    assert set(numbers[4].countries) == {"Frankreich", "Aragon"}
    assert set(numbers[14].countries) == {"Italien", "Burgund"}
    assert set(numbers[15].countries) == {"Italien", "Bayern"}
    assert {a.number for a in BOARD.alliances if a.sea} == {1, 2, 3, 5, 6, 15}
    ends = [c for a in BOARD.alliances for c in a.countries]
    assert all(3 <= ends.count(c.name) <= 4 for c in BOARD.countries)


def test_roads_are_symmetric_and_england_is_an_island():
    """Roads run both ways between known fields; England has no road abroad."""
    for a, b in BOARD.roads:
        assert b in BOARD.neighbours[a] and a in BOARD.neighbours[b]
    assert len(BOARD.roads) == 68
    for a, b in BOARD.roads:
        fa, fb = BOARD.fields[a], BOARD.fields[b]
        if "England" in (fa.country, fb.country):
            assert fa.country == fb.country


def test_names_are_found_with_or_without_accents():
    """Lookups accept any case, accents or none, and German transliterations."""
    for spelling in ("Würzburg", "wurzburg", "WUERZBURG"):
        assert BOARD.field_named(spelling).name == "Würzburg"
    assert BOARD.field_named("citeaux").name == "Cîteaux"
    assert BOARD.field_named("st gallen").name == "St. Gallen"
    assert BOARD.field_named("saint denis").name == "Saint-Denis"
    assert BOARD.country("FRANKREICH").name == "Frankreich"
    assert BOARD.card("red").code == "R" and BOARD.card("r").code == "R"


def test_the_board_is_frozen():
    """Board objects cannot be changed after loading."""
    with pytest.raises(AttributeError):
        BOARD.fields[0].name = "Elsewhere"
    with pytest.raises(TypeError):
        BOARD.by_name["Mainz"] = None


def test_another_board_loads_from_a_file():
    """Another board is another file of the same format."""
    board = load_board(Path(__file__).resolve().parent.parent / "data" / "test-board.toml")
    assert [c.name for c in board.countries] == ["Österreich", "Tirol"]
    assert [c.code for c in board.cards] == ["D", "B"]
    zwettl = board.field_named("zwettl")
    assert [board.fields[f].name for f in board.neighbours[zwettl.index]] == ["Stams"]
    assert board.country("Osterreich").name == "Österreich"
    assert board.digest != BOARD.digest


@pytest.mark.parametrize("change, message", [
    (lambda d: d["roads"]["joins"].append(["Mainz", "Atlantis"]), "unknown field 'Atlantis'"),
    (lambda d: d["roads"]["joins"].append(["Mainz", "Mainz"]), "joins Mainz to itself"),
    (lambda d: d["roads"]["joins"].append(["Lorsch", "Mainz"]), "listed twice"),
    (lambda d: d["alliances"].pop(3), "numbered 1, 2, 3"),
    (lambda d: d["alliances"][0].update(countries=["England", "England"]), "joins a country to itself"),
    (lambda d: d["alliances"][0].update(countries=["England", "Atlantis"]), "two known countries"),
    (lambda d: d["countries"][0]["fields"].append(["Wurzburg", 50.0, 9.0]), "too alike"),
    (lambda d: d["countries"][0]["fields"].append(["York", 50.0, 9.0]), "too alike"),
    (lambda d: d["countries"][0]["fields"].append(["Nowhere", 95.0, 9.0]), "latitude"),
    (lambda d: d["countries"][0].update(fields=[]), "no cloister field"),
    (lambda d: d["cards"][0].update(count=-3), "count"),
    (lambda d: d["cards"][1].update(code="R"), "duplicate card colour"),
    (lambda d: d["cards"][4].update(countries=["Frankreich", "Franken"]), "shown by two"),
    (lambda d: d["countries"].pop(), "lacks: Burgund"),
    (lambda d: d["board"].update(format=2), "format must be 1"),
    (lambda d: d.pop("roads"), "[roads] section"),
    (lambda d: d["countries"][0]["fields"][0].__setitem__(0, "Dur,ham"), "separate words"),
])
def test_bad_board_files_are_refused_with_the_reason(change, message):
    """A board file that breaks the format is refused, naming what is wrong."""
    data = raw()
    change(data)
    with pytest.raises(BoardError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_board(data)


def test_a_broken_board_file_is_refused(tmp_path):
    """A file that is not TOML is refused with a BoardError."""
    path = tmp_path / "broken.toml"
    path.write_text("[board\nid=", encoding="utf-8")
    with pytest.raises(BoardError, match="not valid TOML"):
        load_board(path)
