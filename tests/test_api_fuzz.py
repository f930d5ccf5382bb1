"""schemathesis against the live app: requests generated from docs/openapi.yaml.

The app is the real one (tests/server.py's make_app on a SQLite file), reached through its WSGI
interface, with games of both kinds running and one finished. Requests are generated from the
served document (/api/v1/openapi.json): schema-conforming and schema-violating ones, with made-up
tokens and with the real ones, plus moves chosen from a seat's legal list. Every answer must be
no 5xx and match the document (status code, content type, headers, body schema), a schema-
violating request must be refused, and a refused request (or any GET) must leave every row of
every table as it was. The run is bounded and derandomized: the same requests every time.
"""

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from server import finish_game, module_app
from sqlalchemy import select
from sqlmodel import SQLModel

import pbem.models  # noqa: F401  (the tables, for the database snapshot)
from pbem.db import get_engine
from pbem.services import create_game, parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance]
EXAMPLES = 200


def database(app) -> dict:
    """Every row of every table."""
    with get_engine(app).connect() as conn:
        return {t.name: [tuple(row) for row in conn.execute(select(t).order_by(*t.primary_key))]
                for t in SQLModel.metadata.sorted_tables}


def _game(app, kind: str, players: int, seed: str) -> list[str]:
    with app.app_context():
        created = create_game([parse_player(f"{kind} {i} <{seed}{i}@example.org>")
                               for i in range(players)], seed, kind=kind)
    return [link.rsplit("/", 1)[1] for _, _, link in created.links]


@pytest.fixture(scope="module")
def live(tmp_path_factory, database):
    app = module_app(tmp_path_factory, "api-fuzz")
    tokens = _game(app, "kardinal-koenig", 3, "fuzz-kk") + _game(app, "knights-castles", 4,
                                                                  "fuzz-kc")
    finished = _game(app, "kardinal-koenig", 3, "fuzz-over")
    finish_game(app, app.test_client().get(f"/api/v1/seat/{finished[0]}").get_json()["game"],
                "fuzz-over")
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)
    return app, schema, tokens + finished


def _cases(schema, tokens):
    """A strategy of requests: generated ones (either mode, made-up or real token), and moves
    for a real seat, taken from its legal list or wrong, sent with its turn or an older one."""
    operations = [schema["/api/v1/seat/{token}"]["GET"],
                  schema["/api/v1/seat/{token}/move"]["POST"],
                  schema["/api/v1/openapi.json"]["GET"]]

    @st.composite
    def cases(draw):
        kind = draw(st.sampled_from(["generated", "real token", "legal move"]))
        if kind == "legal move":
            # Only numbers are drawn here; the move is read from the seat's document when the
            # request is made, so generation does not depend on the game's state.
            return ("legal move", draw(st.sampled_from(tokens)), draw(st.integers(0, 10**6)),
                    draw(st.sampled_from([0, 0, 1])),
                    draw(st.sampled_from([None, None, None, "R Nowhere: Atlantis", "draw X",
                                          "pass", "offer nobody: 1 gold for 1 gold"])))
        operation = draw(st.sampled_from(operations[:2] if kind == "real token" else operations))
        mode = draw(st.sampled_from([GenerationMode.POSITIVE, GenerationMode.NEGATIVE]))
        if operation is operations[2]:
            mode = GenerationMode.POSITIVE  # nothing in that request to get wrong
        extra = {"path_parameters": {"token": draw(st.sampled_from(tokens))}} \
            if kind == "real token" else {}
        if mode is GenerationMode.NEGATIVE and operation is operations[0] and not extra:
            mode = GenerationMode.POSITIVE  # a path string cannot break a string schema
        return draw(operation.as_strategy(generation_mode=mode, **extra))

    return cases()


def test_generated_requests_get_documented_answers_and_refusals_change_nothing(live):
    app, schema, tokens = live
    move = schema["/api/v1/seat/{token}/move"]["POST"]
    seen: dict[int, int] = {}

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(case=_cases(schema, tokens))
    def run(case):
        if isinstance(case, tuple):  # a move from a seat's legal list, with its turn or older
            _, token, index, older, wrong = case
            document = app.test_client().get(f"/api/v1/seat/{token}").get_json()
            moves = [m for m in document["legal"] if "<" not in m] or ["pass", "draw deck"]
            case = move.Case(path_parameters={"token": token}, media_type="application/json",
                             body={"move": wrong or moves[index % len(moves)],
                                   "turn": max(document["turn"] - older, 0)})
        before = database(app)
        response = case.call()
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        negative = case.meta is not None and case.meta.generation.mode is GenerationMode.NEGATIVE
        case.validate_response(response, checks=CHECKS + ([negative_data_rejection]
                                                          if negative else []))
        after = database(app)
        if case.method == "POST" and response.status_code == 200:
            added = [row for row in after["moverecord"] if row not in before["moverecord"]]
            assert len(added) == 1, "a move answered 200 is in the log once"
        else:
            assert after == before, f"{case.method} {case.formatted_path} answered " \
                                    f"{response.status_code} yet changed the database"

    run()
    # The run reached the answers that matter, not only 404s.
    assert {200, 400, 404, 409, 422} <= set(seen), seen
