"""What the fuzz tests share: hypothesis settings profiles, hostile text, database snapshots.

The suite runs the `fuzz` profile: few examples, derandomized (the same examples every run),
no example database. `FUZZ_PROFILE=deep` runs many more, drawn afresh each time:

    FUZZ_PROFILE=deep python3 -m pytest tests/server/test_form_fuzz.py tests/server/test_config_fuzz.py
"""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlmodel import SQLModel

import pbem.ground.models  # noqa: F401  (the tables, for the database snapshot)
from pbem.ground.db import get_engine

settings.register_profile("fuzz", max_examples=40, derandomize=True, database=None,
                          deadline=None, suppress_health_check=list(HealthCheck))
settings.register_profile("deep", max_examples=2000, derandomize=False, database=None,
                          deadline=None, suppress_health_check=list(HealthCheck))


def profile(examples: int | None = None) -> settings:
    """The chosen profile's settings; `examples` scales the suite's count for one test (the
    deep profile's count is kept)."""
    chosen = os.environ.get("FUZZ_PROFILE", "fuzz")
    base = settings.get_profile(chosen)
    if examples is not None and chosen == "fuzz":
        return settings(base, max_examples=examples)
    return base


# Text as hostile as a form field can carry: any code point but surrogates (a browser cannot
# send them), control characters, markup, SQL, huge and odd numbers, other scripts' digits.
HOSTILE = ["", " ", "0", "-1", "1", "2", "3", "99", "100000", "99999999999999999999999", "1e3",
           "0x10", "٣", "１", "½", "\x00", "\r\n", "\t", "NaN", "None", "null", "true",
           "<script>alert(1)</script>", "' OR 1=1 --", "../../etc/passwd", "%00", "{{7*7}}",
           "x" * 400, "é" * 120, "\u202e", "\ufeff", "a@b", "p0@example.org",
           "Name <a@example.org>", "de", "en", "es", "xx", "UTC", "Europe/Berlin",
           "Mars/Olympus", "pass", "draw deck", "exchange", "random", "default"]
text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
junk = st.one_of(st.sampled_from(HOSTILE), text, st.integers().map(str))


def snapshot(app, leave_out: tuple[str, ...] = ()) -> dict:
    """Every row of every table (but `leave_out`), in key order."""
    with get_engine(app).connect() as conn:
        return {t.name: [tuple(row) for row in conn.execute(select(t).order_by(*t.primary_key))]
                for t in SQLModel.metadata.sorted_tables if t.name not in leave_out}


ALERT = re.compile(r'role="alert"[^>]*>\s*(?:<p>)?([^<]+)')


def alert(html: str) -> str:
    """The message a refused form's page shows (in its role="alert" element), or ""."""
    match = ALERT.search(html)
    return match.group(1).strip() if match else ""
