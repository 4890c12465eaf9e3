""""Errors name the cause" for a CLI option outside its
command's bounds. ``ctxc events --limit 5000`` (the feed reads at most 1000 per call)
and its kind were an ``internal_error`` (exit 4, "unexpected ValidationError"); they
are the command's ``invalid_command`` naming the option's field and its bound, as the
same value sent through ``dispatch`` is; exit 2, a usage error, as an option argparse
refuses (one exit-code table since issue 35; ``events --limit`` is the total since)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_inprocess import run_cli
from context_compaction import Settings, bootstrap


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    bootstrap(Settings(database_url=url)).close()  # (compact creates no database since issue 35's review)
    return url


@pytest.mark.parametrize(("argv", "field"), [
    (["sessions", "--limit", "20000"], "limit"),
    (["timeline", "S", "--limit", "5000"], "limit"),
    (["history", ""], "session_id"),
])
def test_an_option_beyond_its_bound_is_invalid_command_naming_it(
    db: str, argv: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = run_cli(["--db", db, *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: invalid_command: {field}: "), err
    assert "internal_error" not in err and "ValidationError" not in err, err
