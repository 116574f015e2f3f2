"""The docs' code blocks are copies of files, or regions of files, of ``docs/examples/``, which the
suite runs (tests/test_docs_examples.py): the pages hold the code itself, so that GitHub shows it,
and each block follows a comment naming its source::

    <!-- docs/examples/getting_started.py:job -->

    ```python
    ...the lines between "# --8<-- [start:job]" and "# --8<-- [end:job]", dedented...
    ```

After an example changes, ``make snippets`` (``python -m tests.snippets``) copies every region into
its pages again; tests/test_docs.py fails while a page is out of date.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# A source comment, a blank line, then the fenced block it fills.
BLOCK = re.compile(r"^<!-- (docs/examples/[\w./-]+?)(?::(\w+))? -->\n\n```(\w*)\n(.*?)^```$", re.M | re.S)
SECTION = re.compile(r"--8<-- \[(start|end):(\w+)\]")


def region(path: str, section: str | None = None) -> str:
    """The file's text, or the lines of one section without the section markers in it, dedented."""
    lines = (ROOT / path).read_text().splitlines()
    if section is None:
        return "\n".join(lines)
    inside, found, out = False, False, []
    for line in lines:
        m = SECTION.search(line)
        if m and m.group(2) == section:
            inside, found = m.group(1) == "start", True
        elif not m and inside:
            out.append(line)
    if not found:
        raise LookupError(f"{path} has no section {section!r} (# --8<-- [start:{section}] ... [end:{section}])")
    return textwrap.dedent("\n".join(out))


def synced(text: str) -> str:
    """The page with every sourced block filled from its source as it is now."""

    def fill(m: re.Match) -> str:
        source = m.group(1) + (f":{m.group(2)}" if m.group(2) else "")
        return f"<!-- {source} -->\n\n```{m.group(3)}\n{region(m.group(1), m.group(2))}\n```"

    return BLOCK.sub(fill, text)


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def main() -> int:
    """Rewrite the pages whose blocks differ from their sources; print each one changed."""
    for page in pages():
        text = page.read_text()
        if synced(text) != text:
            page.write_text(synced(text))
            print(f"updated {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
