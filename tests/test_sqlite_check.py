"""emq.W002: a SQLite file shared by workers and web requests needs WAL, IMMEDIATE transactions and a
busy timeout, or both sides fail with "database is locked" (Wagtail on SQLite did, issue #32)."""

from __future__ import annotations

import subprocess

import pytest

from emq.checks import SQLITE_OPTIONS, sqlite_gaps
from tests.procs import manage


@pytest.mark.parametrize(("options", "missing"), [
    ({}, ["WAL", "IMMEDIATE", "timeout"]),
    (SQLITE_OPTIONS, []),
    ({"init_command": "PRAGMA journal_mode = 'wal'", "transaction_mode": "exclusive", "timeout": 5}, []),
    ({"init_command": "PRAGMA journal_mode=WAL", "timeout": 20}, ["IMMEDIATE"]),
    ({"init_command": "PRAGMA journal_mode=DELETE", "transaction_mode": "IMMEDIATE", "timeout": 20}, ["WAL"]),
    ({"init_command": "PRAGMA journal_mode=WAL", "transaction_mode": "IMMEDIATE"}, ["timeout"]),
])
def test_gaps_name_each_missing_part(options, missing):
    gaps = sqlite_gaps(options)
    assert len(gaps) == len(missing) and all(word in gap for word, gap in zip(missing, gaps, strict=True)), gaps


def check(tmp_path, settings_module: str) -> str:
    """``manage.py check`` of a settings module on a SQLite file in tmp_path; its warnings (stderr)."""
    proc = manage({"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "PYTHONPATH": str(tmp_path),
                   "DJANGO_SETTINGS_MODULE": settings_module},
                  "check", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out + err


def test_a_sqlite_file_without_the_options_warns_with_the_exact_options(tmp_path):
    (tmp_path / "bare_sqlite.py").write_text(
        "from echd_project.settings import *  # noqa\nDATABASES['default'].pop('OPTIONS')\n")
    report = check(tmp_path, "bare_sqlite")
    assert "emq.W002" in report and "database is locked" in report, report
    assert "'init_command': 'PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;'" in report
    assert "'transaction_mode': 'IMMEDIATE'" in report and "'timeout': 20" in report


def test_echds_own_settings_on_a_sqlite_file_are_safe(tmp_path):
    assert "emq.W002" not in check(tmp_path, "echd_project.settings")
