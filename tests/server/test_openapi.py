"""docs/openapi.yaml is the JSON API's contract, and stays true.

The document is valid OpenAPI 3.1 and is what /api/v1/openapi.json serves; every route of the
API blueprint is in it with its methods (and nothing else is); the examples in docs/api.md and
real answers of both games, from the first move to the outcome, validate against its schemas.
"""

import json
import random
import re
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_spec
from server import finish_game, module_app

from pbem.services.creating import create_game
from pbem.services.players import parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
SPEC = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text(encoding="utf-8"))
API_DOC = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")


def validator(name: str) -> Draft202012Validator:
    """A JSON Schema 2020-12 validator for components/schemas/`name` (OpenAPI 3.1's dialect)."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": SPEC["components"]}
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def check(name: str, value) -> None:
    errors = sorted(validator(name).iter_errors(value), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory, database):
    return module_app(tmp_path_factory, "openapi")


def test_the_document_is_valid_openapi_3_1():
    assert SPEC["openapi"].startswith("3.1.")
    validate_spec(SPEC)


def test_the_app_serves_the_document_as_json(shared_app):
    response = shared_app.test_client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.get_json() == SPEC


def test_every_route_of_the_api_is_documented_and_nothing_else(shared_app):
    routes = {}
    for rule in shared_app.url_map.iter_rules():
        if rule.endpoint.startswith("api."):
            path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
            routes.setdefault(path, set()).update({m.lower() for m in rule.methods}
                                                  - {"head", "options"})
    documented = {path: set(item) - {"parameters", "summary", "description"}
                  for path, item in SPEC["paths"].items()}
    assert routes == documented


def _examples(kind: str) -> list:
    blocks = re.findall(rf"<!-- example: {kind} -->\n```json\n(.*?)\n```", API_DOC, re.DOTALL)
    assert blocks, f"no '{kind}' example in docs/api.md"
    return [json.loads(block) for block in blocks]


@pytest.mark.parametrize("kind,schema", [("seat", "SeatDocument"), ("move", "MoveAnswer"),
                                         ("error", "Error"),
                                         ("outcome", "KardinalKoenigOutcome")])
def test_the_examples_in_api_md_validate(kind, schema):
    for example in _examples(kind):
        check(schema, example)


def test_the_schemas_refuse_what_the_api_never_answers():
    """The check can fail: a field too many, one missing, or of the wrong type is caught."""
    (seat,) = _examples("seat")
    for broken in ({**seat, "secret": 1}, {k: v for k, v in seat.items() if k != "turn"},
                   {**seat, "turn": "3"}, {**seat, "view": {**seat["view"], "deck": ["R"]}},
                   {**seat, "kind": "chess"}):
        assert not validator("SeatDocument").is_valid(broken)
    assert not validator("Error").is_valid({"error": "", "status": 409})
    assert not validator("MoveAnswer").is_valid(seat)  # a move's answer has `applied`


@pytest.mark.parametrize("kind,players", [("kardinal-koenig", 3), ("knights-castles", 4)])
def test_real_answers_of_both_games_validate(shared_app, kind, players):
    """Every answer while moves are made through the API (each seat's GET, each move's
    answer, each refusal), then every seat's answer once the game is over."""
    app, client = shared_app, shared_app.test_client()
    with app.app_context():
        created = create_game([parse_player(f"P{i} <p{i}@example.org>")
                               for i in range(players)], f"openapi-{kind}", kind=kind)
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    chooser = random.Random(kind)
    for _ in range(40):
        documents = [client.get(f"/api/v1/seat/{t}").get_json() for t in tokens]
        for document in documents:
            check("SeatDocument", document)
            assert document["kind"] == kind
        mover = documents[0]["waiting_for"]
        document = documents[mover]
        stale = client.post(f"/api/v1/seat/{tokens[mover]}/move",
                            json={"move": document["legal"][0], "turn": document["turn"] + 1})
        assert stale.status_code == 409
        check("Error", stale.get_json())
        response = client.post(f"/api/v1/seat/{tokens[mover]}/move",
                               json={"move": chooser.choice(document["legal"]),
                                     "turn": document["turn"]})
        assert response.status_code == 200, response.get_data(as_text=True)
        check("MoveAnswer", response.get_json())
    finish_game(app, created.game_id, kind)
    for token in tokens:
        document = client.get(f"/api/v1/seat/{token}").get_json()
        assert document["status"] == "finished" and "outcome" in document
        check("SeatDocument", document)
