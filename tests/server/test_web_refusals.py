"""A service's refusal (ServiceError) is answered once per blueprint (issue 44, point 7):
`pbem.web.site.answer_refusals`, with `refused_with` for a view whose page says why in its own
way; no view catches one itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

WEB = Path(__file__).resolve().parent.parent.parent / "pbem" / "web"


def _caught(handler: ast.ExceptHandler) -> set[str]:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {kind.id if isinstance(kind, ast.Name) else getattr(kind, "attr", "")
            for kind in kinds if kind is not None}


def test_no_web_module_but_site_catches_a_service_error():
    """Every `except ServiceError` of the web is the one in site.answer_refusals."""
    found = []
    for path in sorted(WEB.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and "ServiceError" in _caught(node):
                found.append(f"{path.name}:{node.lineno}")
    assert [f for f in found if not f.startswith("site.py:")] == [], found
    assert len(found) == 1


@pytest.mark.usefixtures("database")
def test_a_refusal_whose_own_page_cannot_be_read_gets_the_error_page(client):
    """A message to a made-up seat link: the seat page that would say why cannot be read
    either, so the error page of that (404) answers, as the seat page's own would."""
    from server import field

    token = field(client.get("/me").get_data(as_text=True), "csrf_token")
    answer = client.post("/seat/" + "x" * 43 + "/talk", data={"text": "hi", "csrf_token": token})
    page = client.get("/seat/" + "x" * 43)
    assert answer.status_code == page.status_code == 404
    assert answer.get_data(as_text=True) == page.get_data(as_text=True)
