"""The typed API under ``mypy --strict`` (issue 15, ADR 0040): a host's scripts in this
folder and the README's Python examples type-check, ``assert_type`` holds for every
command's result, and a host's typical mistakes are type errors.

One mypy run checks every file (a cold run takes seconds). litellm is not analysed
(``follow_imports = skip``: it is ``Any`` to the checker, as to most hosts' CI, and
analysing it alone takes ~45 s); our package is, from its sources.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from inspect import signature
from pathlib import Path

import pytest
from pydantic import BaseModel

from context_compaction.application.contracts import commands
from context_compaction.application.contracts.commands import AppendMessages, Command, command_types
from helpers import MYPY_CONFIG, mypy_package_root

HERE = Path(__file__).resolve().parent
README = HERE.parents[1] / "README.md"
#: README sections whose ```python blocks are whole programs a host would copy.
README_SECTIONS = ("## Embedding", "## Configuration")
#: The same for the documents the README's longer programs moved to (issue 39).
DOC_SECTIONS = ((HERE.parents[1] / "docs" / "recipes.md", "## Following the event feed"),)

_EXPECTED = re.compile(r"#\s*E:\s*(.+?)\s*$")
_ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<text>.*)$")


def readme_programs() -> dict[str, str]:
    out = {}
    for path, heading in [(README, h) for h in README_SECTIONS] + list(DOC_SECTIONS):
        section = path.read_text(encoding="utf-8").split(heading + "\n", 1)[1].split("\n## ", 1)[0]
        for n, block in enumerate(re.findall(r"```python\n(.*?)```", section, re.S)):
            name = re.sub(r"\W+", "_", heading.strip("# ").lower())
            out[f"readme_{name}_{n}.py"] = block
    return out




@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int, list[str]]]:
    """file name → line → mypy's error texts, for this folder's scripts and the README's."""
    work = tmp_path_factory.mktemp("typing")
    files = [HERE / "user_typed_api.py", HERE / "user_type_errors.py"]
    for name, code in readme_programs().items():
        (work / name).write_text(code, encoding="utf-8")
        files.append(work / name)
    config = work / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(work / "cache"),
         *map(str, files)],
        capture_output=True, text=True, timeout=600, check=False, cwd=work,
        env={**os.environ, "MYPYPATH": mypy_package_root(work / "src")},
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # 2: mypy itself failed
    found: dict[str, dict[int, list[str]]] = {Path(f).name: {} for f in files}
    for line in proc.stdout.splitlines():
        match = _ERROR.match(line)
        if match:
            name = Path(match["file"]).name
            found.setdefault(name, {}).setdefault(int(match["line"]), []).append(match["text"])
    assert found, proc.stdout
    return found


@pytest.mark.slow
def test_a_hosts_typed_script_checks_clean_under_mypy_strict(mypy_errors: dict[str, dict[int, list[str]]]) -> None:
    # Every dispatch's result is asserted with assert_type: a result typed Any, or the
    # wrong model, is an error on that line.
    assert mypy_errors["user_typed_api.py"] == {}


@pytest.mark.slow
def test_the_readme_examples_check_clean_under_mypy_strict(mypy_errors: dict[str, dict[int, list[str]]]) -> None:
    programs = readme_programs()
    assert len(programs) >= 3, sorted(programs)
    assert {name: mypy_errors[name] for name in programs} == {name: {} for name in programs}


@pytest.mark.slow
def test_a_hosts_mistakes_are_type_errors(mypy_errors: dict[str, dict[int, list[str]]]) -> None:
    source = (HERE / "user_type_errors.py").read_text(encoding="utf-8").splitlines()
    expected = {n: m[1] for n, line in enumerate(source, 1) if (m := _EXPECTED.search(line))}
    assert len(expected) >= 10
    errors = mypy_errors["user_type_errors.py"]
    missing = {n: text for n, text in expected.items() if not any(text in e for e in errors.get(n, []))}
    assert missing == {}, errors
    assert sorted(set(errors) - set(expected)) == [], errors  # no error where none was meant


def test_every_command_names_the_result_its_handler_returns() -> None:
    from context_compaction.infrastructure.openapi import RESULT_TYPES

    declared = {kind: cls.result_type() for kind, cls in command_types().items()}
    assert declared == RESULT_TYPES
    with pytest.raises(TypeError, match="names no result type"):
        commands.TurnInputsMixin.result_type()  # generic still: no result of its own
    assert Command[commands.r.TurnRequest].__origin__ is Command  # an alias, not a model class


def _typed_init_parameters(cls: type) -> set[str]:
    """The parameters of the ``__init__`` a class spells out for type checkers only."""
    tree = ast.parse(inspect.getsource(cls))
    inits = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "__init__"]
    assert len(inits) == 1, f"{cls.__name__} spells out no __init__"
    arguments = inits[0].args
    return {a.arg for a in [*arguments.args, *arguments.kwonlyargs]} - {"self"}


def test_append_messages_typed_signature_is_exactly_its_fields() -> None:
    # The signature a type checker sees is spelled out (to take dicts): it must name
    # every field, and nothing else, or a field would be untypeable or a typo accepted.
    assert _typed_init_parameters(AppendMessages) == set(AppendMessages.model_fields)
    # ... and only a type checker sees it: pydantic's own __init__ validates.
    assert AppendMessages.__init__ is BaseModel.__init__
    data = {"session_id": "s", "messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}
    command = AppendMessages(**data)  # type: ignore[arg-type]
    assert command == AppendMessages.model_validate({"type": "append_messages", **data})
    assert command.messages[0].content == "hi"


def test_a_json_command_missing_its_fields_is_invalid_command_not_an_internal_error() -> None:
    from context_compaction import Settings, bootstrap

    with bootstrap(Settings(database_url="sqlite:///:memory:", summarizer="extractive")) as bus:
        for kind in command_types():
            envelope = bus.dispatch_json({"type": kind, "session_id": "s", "unexpected": 1})
            assert envelope["ok"] is False and envelope["error"]["code"] == "invalid_command", (kind, envelope)


def _pyright() -> str | None:
    return os.environ.get("CTXC_TEST_PYRIGHT") or shutil.which("pyright")


@pytest.mark.slow
@pytest.mark.skipif(_pyright() is None, reason="pyright is not installed (npm; not in the offline toolchain)")
def test_pyright_strict_agrees(tmp_path: Path) -> None:
    """The same two scripts under pyright's strict mode, where a pyright is at hand
    (``CTXC_TEST_PYRIGHT=/path/to/pyright``): the host's script is clean, and every line
    marked as a mistake has an error (pyright words them its own way)."""
    config = {"typeCheckingMode": "strict", "reportMissingTypeStubs": False,
              "extraPaths": [p for p in [mypy_package_root(tmp_path / "src")] if p]}
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config))
    for name in ("user_typed_api.py", "user_type_errors.py"):
        shutil.copy(HERE / name, tmp_path / name)
    proc = subprocess.run(
        [str(_pyright()), "--outputjson", "--pythonpath", sys.executable, "user_typed_api.py", "user_type_errors.py"],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )
    report = json.loads(proc.stdout)
    lines: dict[str, set[int]] = {"user_typed_api.py": set(), "user_type_errors.py": set()}
    for item in report["generalDiagnostics"]:
        if item["severity"] == "error":
            lines[Path(item["file"]).name].add(item["range"]["start"]["line"] + 1)
    source = (HERE / "user_type_errors.py").read_text(encoding="utf-8").splitlines()
    expected = {n for n, line in enumerate(source, 1) if _EXPECTED.search(line)}
    assert lines["user_typed_api.py"] == set()
    assert lines["user_type_errors.py"] == expected


def test_the_installed_package_is_visible_to_mypy_with_its_types(tmp_path: Path) -> None:
    """A contributor's editor sees the types (issue 39): in the environment that ``make
    install`` builds, mypy finds ``context_compaction`` from a folder outside the
    repository, with no search path given, and a typed dispatch reveals its result type.
    The default editable mode's import hook hid the package (``Cannot find implementation``)
    and the result was ``Any``."""
    host = tmp_path / "host.py"
    host.write_text(
        "from context_compaction import Settings, bootstrap\n"
        "from context_compaction.application.contracts.commands import PrepareTurn\n"
        "bus = bootstrap(Settings(database_url='memory://'))\n"
        "reveal_type(bus.dispatch(PrepareTurn(session_id='s')))\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", host.name],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert "Cannot find implementation" not in run.stdout, run.stdout
    assert 'Revealed type is "context_compaction.application.contracts.results.turns.TurnRequest"' in run.stdout, run.stdout
