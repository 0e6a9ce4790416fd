"""The detector's per-frame path: its lines and branches (issue 52).

The path is every method reached from ``SubspaceWindowDetector.process_frame`` for a frame
with a picture, among the methods of the modules that run the policy
(``videvent/detectors/subspace_window.py`` and, once it exists, ``rules.py``; a rule's
``see`` counts wherever it is defined). Calls are followed by name (``self.name(...)``,
``anything.name(...)``: every method of that name in those modules), so a loop over the
rules reaches every rule's ``see``. The code that runs only for a frame without a picture
(a ``_no_picture`` method, the branch of ``process_frame`` that returns for a blank or
corrupt frame is counted as part of ``process_frame``) is not followed. The mechanisms the
path calls into (``policy.py``'s state machines, the model, the motion evidence) are not
counted, before or after; nor are class attributes (a rule's ``phase``, which the judge's
loop reads: the test of it is the loop's, and counted there).

Lines: the method's source lines less blank lines, comments and its docstring. Branches:
``if``/``elif`` (each), ``for``, ``while``, ``try``, each ``except``, each conditional
expression, and each boolean operator (``a and b or c``: two).

    python scripts/per_frame_path.py [ROOT]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MODULES = ("subspace_window.py", "rules.py")
START = ("SubspaceWindowDetector", "process_frame")
NOT_FOLLOWED = {"_no_picture", "no_picture"}


def methods(root: Path) -> dict[str, list[tuple[str, ast.FunctionDef, list[str]]]]:
    """Every method of the path's modules by name: (class, node, source lines)."""
    found: dict[str, list] = {}
    for name in MODULES:
        path = root / "videvent" / "detectors" / name
        if not path.exists():
            continue
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        found.setdefault(item.name, []).append((node.name, item, lines))
    policy = root / "videvent" / "detectors" / "policy.py"
    text = policy.read_text()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "see":
                    found.setdefault("see", []).append((node.name, item, text.splitlines()))
    return found


def code_lines(node: ast.FunctionDef, lines: list[str]) -> int:
    skip = set()
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        skip.update(range(body[0].lineno, body[0].end_lineno + 1))
    count = 0
    for number in range(node.lineno, node.end_lineno + 1):
        line = lines[number - 1].strip()
        if number not in skip and line and not line.startswith("#"):
            count += 1
    return count


def branches(node: ast.FunctionDef) -> int:
    count = 0
    for item in ast.walk(node):
        if isinstance(item, (ast.If, ast.For, ast.While, ast.Try, ast.ExceptHandler, ast.IfExp)):
            count += 1
        elif isinstance(item, ast.BoolOp):
            count += len(item.values) - 1
    return count


def path(root: Path):
    table = methods(root)
    start = next(entry for entry in table[START[1]] if entry[0] == START[0])
    reached, todo = {}, [start]
    while todo:
        cls, node, lines = todo.pop()
        if (cls, node.name) in reached:
            continue
        reached[(cls, node.name)] = (code_lines(node, lines), branches(node))
        for item in ast.walk(node):
            if isinstance(item, ast.Call) and isinstance(item.func, ast.Attribute):
                name = item.func.attr
                if name in table and name not in NOT_FOLLOWED:
                    todo.extend(table[name])
    return reached


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    reached = path(root)
    for (cls, name), (lines, count) in sorted(reached.items()):
        print(f"{cls}.{name}: {lines} lines, {count} branches")
    print(f"per-frame path: {len(reached)} methods, {sum(v[0] for v in reached.values())} "
          f"lines, {sum(v[1] for v in reached.values())} branches")


if __name__ == "__main__":
    main()
