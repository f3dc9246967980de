"""Checks a pytest JUnit XML report (``--junitxml``) against the test
functions in the tree, for CI: a run that left a test out, skipped one, or
ran none fails here even when pytest's exit status says otherwise.

    python check_junit.py REPORT passed FILE...
        every ``test_*`` function in FILE... ran and each of its cases
        passed; nothing in the report was skipped.
    python check_junit.py REPORT failed FILE...
        every ``test_*`` function in FILE... ran and each of its cases
        failed in its body (an assertion, not a fixture error): for a run
        with a bug planted on purpose, which every test must catch.

Only the standard library: it runs in the venv the tests ran in.
"""

import ast
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Set, Tuple

Key = Tuple[str, str]  # (module name, test function name)


def tests_in(files: List[str]) -> Set[Key]:
    """The top-level ``test_*`` functions of each file."""
    found = set()
    for file in files:
        tree = ast.parse(Path(file).read_text(), filename=file)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and node.name.startswith("test_"):
                found.add((Path(file).stem, node.name))
    return found


def outcomes(report: str) -> Dict[Key, List[str]]:
    """Each test function's case outcomes: `passed`, `failed`, `error` or
    `skipped` (a parametrized function has a case per parameter)."""
    by_test: Dict[Key, List[str]] = {}
    for case in ET.parse(report).iter("testcase"):
        module = case.get("classname", "").split(".")[-1]
        name = case.get("name", "").split("[")[0]
        children = {child.tag for child in case}
        if "skipped" in children:
            outcome = "skipped"
        elif "error" in children:
            outcome = "error"
        elif "failure" in children:
            outcome = "failed"
        else:
            outcome = "passed"
        by_test.setdefault((module, name), []).append(outcome)
    return by_test


def main(argv: List[str]) -> int:
    if len(argv) < 3 or argv[1] not in ("passed", "failed"):
        print(__doc__, file=sys.stderr)
        return 2
    report, want, files = argv[0], argv[1], argv[2:]
    expected = tests_in(files)
    ran = outcomes(report)
    problems = []
    if not expected:
        problems.append(f"no test functions in {' '.join(files)}")
    for module, name in sorted(expected):
        got = ran.get((module, name))
        if not got:
            problems.append(f"{module}::{name} did not run")
        elif any(outcome != want for outcome in got):
            problems.append(f"{module}::{name}: {', '.join(got)}, expected every case {want}")
    if want == "passed":
        for (module, name), got in sorted(ran.items()):
            if "skipped" in got and (module, name) not in expected:
                problems.append(f"{module}::{name} was skipped")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    cases = sum(len(got) for key, got in ran.items() if key in expected)
    if problems:
        return 1
    print(f"{len(expected)} test functions, {cases} cases, every one {want}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
