"""Admin passwords are hashed with argon2id at the cost the settings give: the real cost by
default (argon2-cffi's, RFC 9106's low-memory profile), the tests' apps at the lowest."""

from __future__ import annotations

import pytest
from server import QUICK_PASSWORDS, make_app
from sqlmodel import select

from pbem.ground.config import ConfigError, load_settings
from pbem.ground.db import reading
from pbem.ground.models import Admin
from pbem.services import stewardship

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

PASSWORD = "a long enough password"
REAL = "$argon2id$v=19$m=65536,t=3,p=4$"


def stored_hash(app) -> str:
    with reading(app) as session:
        return session.exec(select(Admin)).one().password_hash


def test_a_server_with_the_default_settings_hashes_at_the_real_cost(tmp_path):
    defaults = load_settings(environ={})
    app = make_app(tmp_path / "instance", **{k: defaults[k] for k in QUICK_PASSWORDS})
    with app.app_context():
        stewardship.create_admin("boss@example.org", PASSWORD)
        assert stewardship.authenticate("boss@example.org", PASSWORD) is not None
        assert stewardship.authenticate("boss@example.org", PASSWORD + "!") is None
    assert stored_hash(app).startswith(REAL)


def test_the_tests_apps_hash_cheaply_and_a_login_at_the_real_cost_rehashes(tmp_path):
    instance = tmp_path / "instance"
    quick = make_app(instance)
    with quick.app_context():
        stewardship.create_admin("boss@example.org", PASSWORD)
    assert stored_hash(quick).startswith("$argon2id$v=19$m=1024,t=1,p=4$")
    real = make_app(instance, ADMIN_PASSWORD_TIME_COST=3, ADMIN_PASSWORD_MEMORY_KIB=65536)
    with real.app_context():
        assert stewardship.authenticate("boss@example.org", PASSWORD) is not None
    assert stored_hash(real).startswith(REAL)


@pytest.mark.parametrize("name, value", [("ADMIN_PASSWORD_TIME_COST", "0"),
                                         ("ADMIN_PASSWORD_MEMORY_KIB", "512")])
def test_a_cost_too_low_is_refused_with_the_settings_name(name, value):
    with pytest.raises(ConfigError, match=name):
        load_settings(environ={f"PBEM_{name}": value})
