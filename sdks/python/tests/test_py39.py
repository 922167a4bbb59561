"""Python 3.9 is the oldest supported version (pyproject's ``requires-python``).

No 3.9 interpreter is installed here; ``.ci/python.sh`` runs vermin over the sources, and this
test covers what vermin lets through: a ``X | Y`` union in an annotation is a string under
``from __future__ import annotations``, but ``@event`` dataclasses' hints are evaluated at run
time, where 3.9 raises ``TypeError`` for it. Every file also parses as 3.9 grammar.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, List

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("src/**/*.py"), *ROOT.glob("examples/*.py"), *ROOT.glob("tests/**/*.py")])


def annotations(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            yield node.annotation
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.returns is not None:
                yield node.returns
            args = node.args
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    yield a.annotation


def unions(annotation: ast.expr) -> List[str]:
    return [ast.unparse(n) for n in ast.walk(annotation)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr)]


def test_the_sources_are_found() -> None:
    assert len(SOURCES) > 20


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_parses_as_python_3_9_without_pep_604_unions(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path), feature_version=(3, 9))
    found = [u for a in annotations(tree) for u in unions(a)]
    assert not found, f"{path.name}: X | Y needs Python 3.10 where hints are evaluated: {found}"


def test_the_check_finds_a_union() -> None:
    tree = ast.parse("def f(a: int | None) -> None: ...", feature_version=(3, 9))
    assert [u for a in annotations(tree) for u in unions(a)] == ["int | None"]
