"""JSON answers (pbem.web.site.FastJSON, orjson) read back as the same values Flask's own provider
writes: sorted keys, dates and dataclasses through Flask's default, numbers orjson cannot
write through the standard library."""

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime

from flask import jsonify
from flask.json.provider import DefaultJSONProvider
from markupsafe import Markup

from pbem import create_app
from pbem.web.site import FastJSON


@dataclass
class Point:
    x: int
    label: str


def test_answers_mean_what_flasks_own_provider_wrote(tmp_path):
    app = create_app({"INSTANCE_PATH": str(tmp_path), "SECRET_KEY": "json"})
    assert isinstance(app.json, FastJSON)
    value = {"zeta": 1, "alpha": ["Würzburg", "Åland", "日本", "\u2028"], "when":
             datetime(2026, 11, 23, 14, 5, 6, 7, tzinfo=UTC), "day": date(2026, 1, 2),
             "point": Point(3, "Zaragoza"), "markup": Markup("<b>x</b>"), "none": None,
             "float": 0.1, "nested": {"b": [1, {"d": 2, "c": 3}], "a": True}}
    with app.app_context():
        ours = jsonify(value).get_data()
        theirs = DefaultJSONProvider(app).response(value).get_data()
        huge = jsonify({"n": 2 ** 70}).get_data()
    assert json.loads(ours) == json.loads(theirs)
    assert ours.index(b'"alpha"') < ours.index(b'"day"') < ours.index(b'"zeta"')  # sorted
    assert "Würzburg".encode() in ours and ours.endswith(b"}\n")
    assert json.loads(huge) == {"n": 2 ** 70}  # beyond orjson: the standard library wrote it
