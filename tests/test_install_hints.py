"""Every "pip install" emq tells a user names the distribution on PyPI, ``django-emq``, and one of its
extras: ``emq`` on PyPI is another project, so ``pip install 'emq[metrics]'`` installs a stranger's code."""

from __future__ import annotations

import re
import tomllib

from tests.procs import ROOT

HINT = re.compile(r"pip install((?:[ \t]+[^\s`]+)+)")


def extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def hints() -> list[tuple[str, str]]:
    """(file, what a pip install names first) in emq's code and templates, the docs and the README: its
    first word that is no option (nor the file of -r or -c), e.g. django-emq[metrics] or prometheus-client."""
    files = [*(ROOT / "emq").rglob("*.py"), *(ROOT / "emq").rglob("*.html"), *(ROOT / "docs").rglob("*.md"),
             ROOT / "README.md"]
    found = []
    for path in files:
        for m in HINT.finditer(path.read_text()):
            words = [w.strip("\"',;()") for w in m.group(1).split()]
            for i, word in enumerate(words):
                if not word.startswith("-") and (i == 0 or words[i - 1] not in ("-r", "-c")):
                    found.append((str(path.relative_to(ROOT)), word))
                    break
    return found


def test_every_install_hint_names_django_emq_and_a_real_extra():
    found = hints()
    assert any(f.startswith("emq/") for f, _ in found)
    for where, what in found:
        if where.startswith("emq/") or "emq" in what:
            m = re.fullmatch(r"django-emq\[([\w,]+)\]", what)
            assert m, f"{where} says pip install {what}: name the distribution, e.g. \"django-emq[metrics]\""
            assert set(m.group(1).split(",")) <= extras(), f"{where}: no such extra in pyproject.toml: {what}"
