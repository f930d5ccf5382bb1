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

import pbem.ground.models  # noqa: F401  (the tables, for the database snapshot)
from pbem.ground.db import get_engine
from pbem.services.creating import create_game
from pbem.services.players import parse_player

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


# --- schemathesis's own run, as `st run` makes it: every phase, every check ----------------------

RUN_EXAMPLES = 300  # per operation: enough to reach 664.0 and a text one past the limit
# Statuses a schema-valid request may get: the token's (404, 410), the game's state (409), the
# seat's rate of messages (429), and 422 for what the schema cannot state: the rules of the
# game (a move that does not parse or is not legal now, two different move counts), a
# message of spaces or with control characters, `to` a seat the game has not or a computer
# player, a turn to take back that the game's state refuses (not the seat's last, or no request
# standing to answer). Never 400: that says the body is not of the document's form.
VALID_REFUSED = ["2xx", "404", "409", "410", "422", "429"]
# And a schema-violating one, beside the usual refusals: 413 for a body over the server's
# limit (a text far over maxLength), 410 for an old token.
INVALID_REFUSED = ["400", "404", "405", "409", "410", "413", "422", "429"]


def schemathesis_run(app, token: str, examples: int = RUN_EXAMPLES) -> dict:
    """schemathesis's engine on the app (its WSGI interface), with the seat token `token` in
    every path, a fixed seed and `examples` per operation: the failures found, the requests
    made per phase and how often each check ran."""
    from schemathesis.engine import events, from_schema

    config = schemathesis.Config.from_dict({
        "seed": 34, "continue-on-failure": True,
        "generation": {"max-examples": examples},
        "parameters": {"token": token},
        "checks": {"enabled": True,
                   "negative_data_rejection": {"expected-statuses": INVALID_REFUSED}},
        "operations": [{"include-operation-id": operation,
                        "checks": {"positive_data_acceptance": {
                            "expected-statuses": VALID_REFUSED}}}
                       for operation in ("makeMove", "postMessage", "askUndo",
                                         "answerUndo")],
    })
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app, config=config)
    found = {"failures": [], "requests": {}, "checks": {}, "errors": []}
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            recorder = event.recorder
            phase = str(event.phase)
            found["requests"][phase] = found["requests"].get(phase, 0) + len(
                recorder.interactions)
            for case_id, checks in recorder.checks.items():
                for check in checks:
                    found["checks"][check.name] = found["checks"].get(check.name, 0) + 1
                    if check.failure_info is not None:
                        case = recorder.cases[case_id].value
                        answer = recorder.interactions[case_id].response
                        found["failures"].append(
                            f"{recorder.label} {check.name}: {case.body!r:.200} -> "
                            f"{answer.status_code if answer else None} "
                            f"{(answer.content if answer else b'')[:200]!r}")
        elif isinstance(event, (events.NonFatalError, events.FatalError)):
            found["errors"].append(repr(event))
    return found


@pytest.fixture(scope="module")
def talk_app(tmp_path_factory, database):
    app = module_app(tmp_path_factory, "api-run")
    app.config["TALK_RATE"] = "100000 per minute"  # the rate limit hides nothing of the rest
    return app


def test_a_schemathesis_run_finds_the_contract_and_the_answers_agree(talk_app):
    """schemathesis's engine, as the attacker ran it: examples, coverage and fuzzing phases,
    every check (positive data accepted, negative data refused, the documented statuses,
    bodies, headers and methods), a few hundred examples per operation with a real seat token.
    It once found a 19,999-character message valid by the document and refused, and
    `moves_played: 664.0` refused; now it finds nothing."""
    tokens = _game(talk_app, "kardinal-koenig", 3, "st-run")
    found = schemathesis_run(talk_app, tokens[0])
    assert not found["errors"], found["errors"]
    assert not found["failures"], "\n".join(found["failures"][:20])
    # The run did what it says: every phase sent requests, and the checks that judge the
    # answers to valid and invalid data ran on them.
    assert found["requests"].get("coverage", 0) > 50 and \
        found["requests"].get("fuzzing", 0) > RUN_EXAMPLES, found["requests"]
    for check in ("positive_data_acceptance", "negative_data_rejection", "not_a_server_error",
                  "response_schema_conformance", "status_code_conformance",
                  "unsupported_method"):
        assert found["checks"].get(check, 0) > 50, (check, found["checks"])


def test_the_served_document_says_the_servers_longest_message(talk_app):
    """The document a client reads says the server's [talk] max_length: 2000 by default, and
    what the operator chose; a text of that length is sent, one longer is a 400."""
    [token, *_] = _game(talk_app, "kardinal-koenig", 3, "st-limit")
    client = talk_app.test_client()

    def longest() -> int:
        document = client.get("/api/v1/openapi.json").get_json()
        return document["components"]["schemas"]["MessageRequest"]["properties"]["text"][
            "maxLength"]

    assert longest() == talk_app.config["TALK_MAX_LENGTH"] == 2000
    talk_app.config["TALK_MAX_LENGTH"] = 150
    try:
        assert longest() == 150
        url = f"/api/v1/seat/{token}/messages"
        assert client.post(url, json={"text": "x" * 150}).status_code == 201
        refused = client.post(url, json={"text": "x" * 151})
        assert refused.status_code == 400 and "1 to 150 characters" in refused.get_json()["error"]
    finally:
        talk_app.config["TALK_MAX_LENGTH"] = 2000


def test_whole_numbers_written_with_a_point_are_taken(talk_app):
    """JSON Schema's integer takes 664.0: moves_played, turn and to written so are taken."""
    tokens = _game(talk_app, "kardinal-koenig", 3, "st-float")
    client = talk_app.test_client()
    document = client.get(f"/api/v1/seat/{tokens[0]}").get_json()
    mover = document["waiting_for"]
    document = client.get(f"/api/v1/seat/{tokens[mover]}").get_json()
    answer = client.post(f"/api/v1/seat/{tokens[mover]}/move",
                         json={"move": document["legal"][0],
                               "moves_played": float(document["moves_played"])})
    assert answer.status_code == 200, answer.get_json()
    other = (mover + 1) % 3
    sent = client.post(f"/api/v1/seat/{tokens[mover]}/messages",
                       json={"text": "hello", "to": float(other)})
    assert sent.status_code == 201 and sent.get_json()["to"] == other
    stale = client.post(f"/api/v1/seat/{tokens[mover]}/move",
                        json={"move": "pass", "moves_played": 0.5})
    assert stale.status_code == 400
