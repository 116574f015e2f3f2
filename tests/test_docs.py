"""The documentation site builds with ``mkdocs build --strict`` (a broken link or a missing snippet
fails it), and its reference pages list everything the code has: every setting, every job option,
every option of emq's commands, every exception and system check. Every Python block of a page is
a copy of a region of docs/examples/ (tests/snippets.py), which tests/test_docs_examples.py runs.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys

import pytest
from django.core.management import BaseCommand, load_command_class

import emq.errors
from emq.core.config import DEFAULTS
from emq.jobs.options import Options
from tests import snippets
from tests.procs import ROOT

DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md"))
COMMANDS = sorted(p.stem for p in (ROOT / "emq" / "management" / "commands").glob("[!_]*.py"))


def rows(page: str) -> dict[str, str]:
    """A reference page's table rows: first cell's code name -> the rest of the row."""
    found = {}
    for line in (DOCS / page).read_text().splitlines():
        m = re.match(r"^\| `([^`]+)` \|(.*)\|$", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


@pytest.mark.timeout(180)
def test_the_site_builds_strict(tmp_path):
    """mkdocs build --strict: every page, link, anchor, snippet and API reference resolves."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "reference" / "api" / "index.html").read_text().count("doc-object") > 20


def test_every_setting_is_in_the_reference():
    """The settings table has one row per key of emq.core.config.DEFAULTS, and no other."""
    documented = {name for name in rows("reference/settings.md") if name.startswith("EMQ_")}
    assert documented == set(DEFAULTS), (
        f"add rows to docs/reference/settings.md for {sorted(set(DEFAULTS) - documented)}; "
        f"remove rows for {sorted(documented - set(DEFAULTS))}"
    )


def test_every_job_option_is_in_the_reference():
    """Every field of Options (what .using() takes), and the decorator's cron and every, has a row."""
    documented = set(rows("reference/options.md"))
    wanted = {f.name for f in dataclasses.fields(Options)} | {"cron", "every"}
    assert wanted <= documented, f"add rows to docs/reference/options.md for {sorted(wanted - documented)}"


def _own_options(name: str) -> dict[str, str]:
    """The options a command adds to Django's own, with their help text."""
    base = {s for a in BaseCommand().create_parser("manage.py", "x")._actions for s in a.option_strings}
    parser = load_command_class("emq", name).create_parser("manage.py", name)
    return {a.option_strings[-1]: a.help for a in parser._actions if a.option_strings and
            not set(a.option_strings) & base}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_option_is_in_the_reference(name):
    """docs/reference/commands.md lists each option of the command with its --help text, word for word."""
    page = (DOCS / "reference" / "commands.md").read_text()
    assert f"## `{name}`" in page, f"docs/reference/commands.md has no section for {name}"
    section = page.split(f"## `{name}`", 1)[1].split("\n## ", 1)[0]
    listed = {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `(--[\w-]+)` \|(.*)\|$", section, re.M)}
    assert listed == _own_options(name)


def test_troubleshooting_names_every_exception_and_check():
    """Each exception class of emq.errors and each system check id emq can report is explained."""
    page = (DOCS / "troubleshooting.md").read_text()
    classes = {n for n, v in vars(emq.errors).items() if isinstance(v, type) and issubclass(v, Exception)}
    ids = set()
    for path in (ROOT / "emq").rglob("*.py"):
        ids |= set(re.findall(r'id="(emq\.[EW]\d+)"', path.read_text()))
    missing = {c for c in classes if f"`{c}`" not in page} | {i for i in ids if f"`{i}`" not in page}
    assert classes and ids and not missing, sorted(missing)


def test_python_blocks_are_copies_of_tested_examples():
    """A page's ```python block follows a comment naming a region of docs/examples/ (tests/snippets.py)."""
    fence = re.compile(r"^```python\n", re.M)
    for page in PAGES:
        text = page.read_text()
        sourced = {m.start(4) for m in snippets.BLOCK.finditer(text) if m.group(1).endswith(".py")}
        for m in fence.finditer(text):
            assert m.end() in sourced, (
                f"{page.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}: inline python is not tested; put "
                "it in docs/examples/ and copy it under <!-- docs/examples/<file>.py:<section> --> (make snippets)")


def test_every_code_block_equals_its_source():
    """GitHub shows the pages' code, so the pages hold it: each sourced block is its region of docs/examples/."""
    stale = [str(p.relative_to(ROOT)) for p in PAGES if snippets.synced(p.read_text()) != p.read_text()]
    assert not stale, f"out of date with docs/examples/: {stale}; run `make snippets` (python -m tests.snippets)"


def test_the_readme_points_only_inside_the_repository():
    """The README links into docs/ and the repository, never to a file outside it."""
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)#]+)", readme):
        assert not target.startswith(("..", "/")), target
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_what_a_newcomer_checked_against_the_code_holds():
    """The claims issue #32 found false: there is a blocking wait (ref.wait), and the embedded server's
    folder is named for .gitignore where the guide starts it (a JobRef's repr: docs/examples/getting_started.py)."""
    migrating = (DOCS / "migrating.md").read_text()
    assert "no blocking" not in migrating and "ref.wait(timeout=" in migrating
    start = (DOCS / "getting-started.md").read_text()
    assert "add `.emq/` to your `.gitignore`" in start


def test_make_quick_skips_only_files_that_exist_and_the_docs_say_how():
    """`make quick` (the edit-test loop the README and docs/contributing.md describe) names real test files."""
    makefile = (ROOT / "Makefile").read_text()
    skip = re.search(r"^QUICK_SKIP := (.*?)\n\S", makefile, re.M | re.S).group(1).replace("\\\n", " ").split()
    missing = [name for name in skip if not (ROOT / "tests" / f"test_{name}.py").exists()]
    assert skip and not missing, f"the Makefile's QUICK_SKIP names no such file: {missing}"
    assert "make quick" in (ROOT / "README.md").read_text() and "make quick" in (DOCS / "contributing.md").read_text()
