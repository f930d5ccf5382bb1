"""Hypothesis fuzzing of the settings: random TOML files (known and unknown keys and sections,
values of every TOML type, broken TOML, bytes that are not UTF-8) and PBEM_* environment
variables holding junk.

Either the settings load, or one ConfigError says what is wrong on one line, naming the key as
written in the file or the variable (a file that is not TOML at all is named with the place of
the fault). A command run with them reports that line as "Error: ..." and no traceback.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from click.testing import CliRunner
from fuzzing import junk, profile, text
from hypothesis import given
from hypothesis import strategies as st

from pbem.command import cli
from pbem.ground.config import SETTINGS, ConfigError, load_settings

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "config.example.toml"


def toml_places() -> list[tuple[str | None, str]]:
    """Each setting's section and key in the TOML file ([mail] backend for MAIL_BACKEND), as
    config.example.toml writes them (tests/server/test_config.py keeps it equal to SETTINGS)."""
    places = []
    for key, value in tomllib.loads(EXAMPLE.read_text(encoding="utf-8")).items():
        if isinstance(value, dict):
            places += [(key, inner) for inner in value]
        else:
            places.append((None, key))
    assert len(places) == len(SETTINGS)
    return places


KNOWN = toml_places()
SECTIONS = sorted({section for section, _ in KNOWN if section})
bare_key = st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)
key_text = st.one_of(bare_key, text.map(lambda t: '"' + t.replace("\\", "\\\\")
                                        .replace('"', '\\"') + '"'))
TOML_VALUES = ['"text"', '""', "0", "-1", "1", "8080", "70000", "3.5", "nan", "inf", "true",
               "false", "[]", "[1, 2]", '["a", 1]', "{}", "{ a = 1 }", "1979-05-27T07:32:00Z",
               "1979-05-27", "07:32:00", "'''multi\nline'''", '"\\u00e9"', "0x1F", "1_000",
               '"sqlite:///x.db"', '"postgresql://u@h/d"', '"https://x.example.org"',
               '"p@example.org"', '"3 per minute"', '"Europe/Berlin"', '"24,12"', '"none"',
               '"smtp"', '"local"', '"starttls"', '"de"', "9" * 30]
toml_value = st.one_of(st.sampled_from(TOML_VALUES),
                       junk.map(lambda t: '"' + t.replace("\\", "\\\\").replace('"', '\\"')
                                .replace("\n", "\\n").replace("\r", "\\r") + '"'),
                       junk)  # unquoted: mostly not TOML at all


@st.composite
def toml_file(draw) -> tuple[bytes, list[str]]:
    """A settings file and the keys it names (as a message would write them)."""
    lines, named = [], []
    sections: dict[str | None, list[tuple[str, str]]] = {}
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            section, key = draw(st.sampled_from(KNOWN))
        else:
            section = draw(st.sampled_from([None, *SECTIONS]) | bare_key)
            key = draw(key_text)
        sections.setdefault(section, []).append((key, draw(toml_value)))
    for section, items in sorted(sections.items(), key=lambda i: i[0] is not None):
        if section is not None:
            lines.append(f"[{section}]")
        for key, value in items:
            lines.append(f"{key} = {value}")
            named.append(key.strip('"'))
            if section is not None:
                named.append(f"[{section}] {key.strip(chr(34))}")
    raw = "\n".join(lines).encode("utf-8")
    if draw(st.integers(0, 9)) == 0:  # cut off, or bytes that are not UTF-8
        raw = raw[:draw(st.integers(0, len(raw)))] + draw(st.binary(max_size=6))
    return raw, named


def refused_clearly(exc: ConfigError, names: list[str]) -> None:
    message = str(exc)
    assert "\n" not in message.strip(), message
    assert "Traceback" not in message
    assert any(name in message for name in names) or "is not valid TOML" in message, \
        (message, names)


def run_command(env: dict[str, str], tmp: Path):
    """`pbem mail-status` with these settings, the paths kept in the test's folder."""
    env = {**env, "PBEM_INSTANCE_PATH": str(tmp / "instance"),
           "PBEM_DATABASE_URL": f"sqlite:///{tmp / 'instance' / 'pbem.sqlite3'}",
           "PBEM_MAIL_FOLDER": str(tmp / "mail")}
    return CliRunner().invoke(cli, ["mail-status"], env=env)


def test_random_settings_files_load_or_are_refused_naming_the_key(tmp_path):
    path = tmp_path / "pbem.toml"
    seen = {"loaded": 0, "refused": 0}

    @profile(150)
    @given(document=toml_file())
    def run(document):
        raw, named = document
        path.write_bytes(raw)
        try:
            values = load_settings(environ={"PBEM_CONFIG": str(path)})
        except ConfigError as exc:
            seen["refused"] += 1
            refused_clearly(exc, named)
            return
        seen["loaded"] += 1
        data = tomllib.loads(raw.decode("utf-8"))
        for section, key in KNOWN:
            given_value = (data.get(section, {}) if section else data).get(key)
            name = f"{section}_{key}".upper() if section else key.upper()
            if given_value is not None:
                assert values[name] == given_value, name

    run()
    assert seen["loaded"] and seen["refused"], seen


def test_junk_in_pbem_variables_is_refused_naming_the_variable():
    names = [f"PBEM_{name}" for name in SETTINGS if name != "CONFIG"]
    seen = {"loaded": 0, "refused": 0}

    @profile(150)
    @given(environ=st.dictionaries(
        st.sampled_from(names) | bare_key.map(lambda k: f"PBEM_{k.upper()}"),
        junk.map(lambda v: v.replace("\x00", "")), max_size=4))
    def run(environ):
        try:
            load_settings(environ=environ)
        except ConfigError as exc:
            seen["refused"] += 1
            refused_clearly(exc, list(environ))
            return
        seen["loaded"] += 1

    run()
    assert seen["loaded"] and seen["refused"], seen


def test_a_command_reports_any_bad_setting_in_one_line_without_a_traceback(tmp_path):
    path = tmp_path / "pbem.toml"

    @profile(25)
    @given(document=toml_file(), variable=st.sampled_from(sorted(SETTINGS)), value=junk)
    def run(document, variable, value):
        path.write_bytes(document[0])
        env = {"PBEM_CONFIG": str(path)}
        if variable not in ("INSTANCE_PATH", "DATABASE_URL", "MAIL_FOLDER"):
            env[f"PBEM_{variable}"] = value.replace("\x00", "")
        try:
            load_settings(environ=env)
            expected = None
        except ConfigError as exc:
            expected = f"Error: {exc}"
        result = run_command(env, tmp_path)
        assert result.exception is None or isinstance(result.exception, SystemExit), \
            result.output
        assert "Traceback" not in result.output
        if expected is not None:
            assert result.exit_code == 2 and expected in result.output, result.output

    run()
