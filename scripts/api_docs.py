#!/usr/bin/env python3
"""The index of docs/api/ and its check (run by scripts/docs.sh).

    python3 scripts/api_docs.py index docs/api   # writes c/ and index.html
    python3 scripts/api_docs.py check docs/api   # every link resolves

`check` reads the links from the written index.html (not from the table
below), and fails when one is missing, points to no file, leads to a page
without the text that shows it is the right reference, or when a linked page
has a local link (href or src) to a file that does not exist.
"""

from __future__ import annotations

import html
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag

ROOT = Path(__file__).resolve().parent.parent

# (link, title, what it is, a text the page must contain)
ENTRIES = [
    ("rust/volt_sem/index.html", "Rust: volt-sem",
     "The core crate: Semaphore, Mutex, RwLock, the algorithm and the waker contract.",
     "The waker contract"),
    ("rust-ffi/volt_sem/index.html", "Rust side of the C ABI: volt-sem-ffi",
     "The exported functions, as Rust sees them; C users read the header below.",
     "volt_sem_acquire"),
    ("c/index.html", "C: include/volt_sem.h",
     "The header with its ownership, threading, callback, lifetime and fork rules "
     "(also as the file: c/volt_sem.h).",
     "volt_waiter_init"),
    ("node/index.html", "Node.js: volt-sem",
     "TypeDoc of bindings-node/index.d.ts.",
     "Semaphore"),
    ("python/volt_sem.html", "Python: volt_sem",
     "pdoc of the built wheel (docstrings and .pyi stubs).",
     "acquire_blocking"),
]


def version() -> str:
    text = (ROOT / "Cargo.toml").read_text()
    m = re.search(r'^\[workspace\.package\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S)
    return m.group(1) if m else "unknown"


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }}
pre {{ background: #f6f8fa; padding: 1rem; overflow-x: auto; font-size: 0.85rem; line-height: 1.35; }}
dt {{ margin-top: 1rem; font-weight: 600; }}
</style>
</head>
<body>
{body}
</body>
</html>
"""


def write_index(out: Path) -> None:
    c = out / "c"
    c.mkdir(parents=True, exist_ok=True)
    header = ROOT / "include" / "volt_sem.h"
    shutil.copy(header, c / "volt_sem.h")
    (c / "index.html").write_text(PAGE.format(
        title="volt_sem.h",
        body=(f'<h1>include/volt_sem.h</h1>\n<p><a href="../index.html">All references</a> · '
              f'<a href="volt_sem.h">the file</a></p>\n'
              f"<pre><code>{html.escape(header.read_text())}</code></pre>"),
    ), encoding="utf-8")
    items = "\n".join(
        f'<dt><a href="{link}">{html.escape(title)}</a></dt>\n<dd>{html.escape(what)}</dd>'
        for link, title, what, _ in ENTRIES
    )
    (out / "index.html").write_text(PAGE.format(
        title=f"volt-sem {version()}: API references",
        body=(f"<h1>volt-sem {version()}: API references</h1>\n"
              "<p>Built by <code>make docs</code> from this checkout.</p>\n"
              f"<dl>\n{items}\n</dl>"),
    ), encoding="utf-8")
    print(f"wrote {out / 'index.html'}")


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)


def links_of(page: Path) -> list[str]:
    p = Links()
    p.feed(page.read_text(encoding="utf-8", errors="replace"))
    return p.links


def is_local(link: str) -> bool:
    return not re.match(r"^([a-z][a-z0-9+.-]*:|//|#)", link, re.I)


def resolve(page: Path, link: str) -> Path:
    path = unquote(urldefrag(link)[0].split("?", 1)[0])
    target = (page.parent / path) if path else page
    return target / "index.html" if target.is_dir() else target


def check(out: Path) -> int:
    errors: list[str] = []
    index = out / "index.html"
    if not index.is_file():
        print(f"FAIL {index} does not exist: run make docs")
        return 1
    found = [link for link in links_of(index) if is_local(link)]
    for link, title, _, needle in ENTRIES:
        if link not in found:
            errors.append(f"index.html has no link to {link} ({title})")
    checked = 0
    for link in found:
        target = resolve(index, link)
        if not target.is_file():
            errors.append(f"index.html -> {link}: no such file")
            continue
        text = target.read_text(encoding="utf-8", errors="replace")
        needle = next((n for l, _, _, n in ENTRIES if l == link), None)
        if needle and needle not in text:
            errors.append(f"index.html -> {link}: the page does not mention {needle!r}")
        if target.suffix == ".html":
            for sub in links_of(target):
                if is_local(sub) and not resolve(target, sub).exists():
                    errors.append(f"{target.relative_to(out)} -> {sub}: no such file")
                checked += 1
    for e in errors:
        print(f"FAIL {e}")
    total = len(found) + checked
    print(f"({len(found)} index links, {checked} links on the linked pages)")
    print(f"docs: {total - len(errors)} passed, {len(errors)} failed")
    return 1 if errors else 0


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("index", "check"):
        print(__doc__)
        return 2
    out = Path(sys.argv[2]).resolve()
    if sys.argv[1] == "index":
        write_index(out)
        return 0
    return check(out)


if __name__ == "__main__":
    sys.exit(main())
