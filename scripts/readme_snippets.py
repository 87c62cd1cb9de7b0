#!/usr/bin/env python3
"""Runs the code blocks of Markdown files, in order, like doctests.

    python3 scripts/readme_snippets.py README.md [OTHER.md ...]
    python3 scripts/readme_snippets.py --list README.md     # how each block is handled

Every fenced code block is run as written, as a reader who copies the page
block by block into one new, empty folder would run it. Each Markdown file gets
its own scratch folder (outside the repository), shared by its blocks in order;
a sibling `volt-sem` there is a link to this checkout, and `VOLT` is set to its
path. The runner never edits a block: a block that is a fragment fails.

A block may start with a comment naming its file (`// src/main.rs`,
`# app.py`, `/* app.c */`, `// app.mjs`, `# Cargo.toml`); it is written there
before it runs. By language:

  toml, zig                written to the file it names (it must name one:
                           `// build.zig`); a later sh block builds it
  rust                     written to its file (default src/main.rs), then
                           `cargo run` in the folder (a `# Cargo.toml` block
                           must come first; the checkout's Cargo.lock is copied
                           in so dependency versions are the tested ones)
  c                        compiled with -std=c11 -Wall -Wextra -Werror against
                           the release libvolt_sem.a and run (a block that
                           includes <uv.h> is also linked to libuv, through
                           pkg-config)
  python, py               run with the folder's .venv if a block made one,
                           else with a runner venv holding the built wheel
  js, javascript, mjs, cjs run with node: `.mjs` (ESM) or `.cjs` (CommonJS)
                           from the file name, else ESM if it has import/export
                           lines; `volt-sem` resolves to the folder's
                           node_modules if a block installed it, else to
                           bindings-node/
  sh, bash, shell          run with bash -euo pipefail in the folder; `zig`
                           is on PATH: the machine's, else PyPI's ziglang in
                           $CARGO_TARGET_DIR/zig-venv (the Node addon's build
                           installs it there)
  text, console-output     not code: listed, never run

A file with a block that reads REDIS_URL gets a redis-server of its own
(scripts/local_redis.py: a free loopback port, no persistence) for all its
blocks, its URL in REDIS_URL; it is stopped after the file's last block.

Before the blocks, every relative link of the file (`[x](docs/faq.md#fork)`)
must lead to an existing file and, in a Markdown target, to a heading's anchor
(links into docs/api/, built by `make docs`, are only checked when it exists).

Anything else fails unless marked. To leave a block out, put this line (blank
lines allowed) right before its fence; the reason is mandatory:

  <!-- snippet: skip (why it cannot run here) -->

Needs what the blocks use: the release C library (`cargo build --release -p
volt-sem-ffi`), the wheel (`make -C bindings-python wheel`), the Node addon
(`make -C bindings-node build`). Closing line: `snippets: N passed, M failed,
K skipped`; the exit status is non-zero when a block failed.
"""

from __future__ import annotations

import argparse
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from local_redis import LocalRedis

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 300  # seconds per block; a block that runs longer has hung

LANG_ALIASES = {
    "rs": "rust",
    "py": "python",
    "python3": "python",
    "javascript": "js",
    "mjs": "js",
    "cjs": "js",
    "bash": "sh",
    "shell": "sh",
    "text": "text",
    "console-output": "text",
}
RUNNABLE = {"toml", "zig", "rust", "c", "python", "js", "sh"}

MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(.*?)\s*-->\s*$")
SKIP = re.compile(r"^skip\s*\((.+)\)$")
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")
# A first line naming the block's file: `// x.rs`, `# x.py`, `/* x.c */`, `-- x`.
NAME_LINE = re.compile(
    r"^\s*(?://|#|/\*)\s*([\w./-]+\.(?:rs|py|c|h|mjs|cjs|js|toml|zig))\b(?:\s*\*/)?(?::.*|\s.*)?$"
)


class SnippetError(Exception):
    """A Markdown file the runner cannot accept (unclosed fence, bad marker)."""


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str  # normalised
    raw_lang: str
    code: str
    skip: str | None  # the reason, when marked

    @property
    def where(self) -> str:
        try:
            rel = self.path.resolve().relative_to(ROOT)
        except ValueError:
            rel = self.path
        return f"{rel}:{self.line}"

    @property
    def file_name(self) -> str | None:
        first = self.code.split("\n", 1)[0]
        m = NAME_LINE.match(first)
        return m.group(1) if m else None


def parse(path: Path) -> list[Block]:
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    pending: str | None = None  # a marker waiting for its fence
    pending_line = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            if pending is not None:
                raise SnippetError(f"{path}:{pending_line}: snippet marker not followed by a code block")
            pending, pending_line = m.group(1), i + 1
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            indent, fence, info = f.group(1), f.group(2), f.group(3)
            start = i
            body: list[str] = []
            i += 1
            while i < len(lines):
                close = lines[i]
                if close.strip().startswith(fence[0] * len(fence)) and set(close.strip()) == {fence[0]}:
                    break
                body.append(close[len(indent):] if close.startswith(indent) else close.lstrip())
                i += 1
            else:
                raise SnippetError(f"{path}:{start + 1}: code block never closed")
            raw = info.lower()
            lang = LANG_ALIASES.get(raw, raw)
            skip = None
            if pending is not None:
                s = SKIP.match(pending)
                if not s or not s.group(1).strip():
                    raise SnippetError(
                        f"{path}:{pending_line}: unknown snippet marker {pending!r} "
                        "(the only one is `skip (reason)`, and the reason is mandatory)"
                    )
                skip = s.group(1).strip()
                pending = None
            blocks.append(Block(path, start + 1, lang, raw, "\n".join(body) + "\n", skip))
            i += 1
            continue
        if pending is not None and line.strip():
            raise SnippetError(f"{path}:{pending_line}: snippet marker not followed by a code block")
        i += 1
    if pending is not None:
        raise SnippetError(f"{path}:{pending_line}: snippet marker at the end of the file")
    return blocks


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"`|\*\*|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(md: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in strip_code(md.read_text(encoding="utf-8"), spans=False).split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def strip_code(text: str, spans: bool = True) -> str:
    """The text without fenced blocks (and inline code spans, if `spans`)."""
    out, fence = [], None
    for line in text.split("\n"):
        f = FENCE.match(line)
        if fence is None and f:
            fence = f.group(2)[0] * len(f.group(2))
            continue
        if fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
                fence = None
            continue
        out.append(re.sub(r"`[^`]*`", "", line) if spans else line)
    return "\n".join(out)


def broken_links(md: Path) -> list[str]:
    """Relative links (and their #anchors in Markdown targets) that lead nowhere."""
    errors = []
    text = strip_code(md.read_text(encoding="utf-8"))
    for m in re.finditer(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text):
        link = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", link, re.I):
            continue  # http:, mailto: ...
        path, _, frag = link.partition("#")
        target = (md.parent / path).resolve() if path else md.resolve()
        if not target.exists():
            if not str(target).startswith(str(ROOT / "docs" / "api")):
                errors.append(f"{link}: no such file")
            continue  # docs/api/ exists only after `make docs`
        if frag and target.suffix == ".md" and frag not in anchors(target):
            errors.append(f"{link}: no heading with that anchor in {target.name}")
    return errors


def target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target").resolve()


class Runner:
    def __init__(self, md: Path, scratch: Path):
        self.md = md
        self.work = scratch / "app"
        self.work.mkdir(parents=True)
        (scratch / "volt-sem").symlink_to(ROOT)
        self.env = dict(os.environ)
        self.env["VOLT"] = str(ROOT)
        self.env["CARGO_TARGET_DIR"] = str(target_dir())
        # Snippet projects build in their own target dir: no lock waits on, and no
        # feature churn in, the workspace's; sh blocks still see the workspace's.
        self.cargo_target = target_dir() / "snippets"
        self.env.setdefault("npm_config_audit", "false")
        self.env.setdefault("npm_config_fund", "false")
        self.env.setdefault("npm_config_update_notifier", "false")
        self.env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        self.counter = 0
        zig_python = target_dir() / "zig-venv" / "bin" / "python"
        if shutil.which("zig") is None and zig_python.exists():
            # The page says "Zig 0.17 on your PATH"; the build's own ziglang is
            # one (a second pip install of it would cost ~20 s per run).
            bin_dir = scratch / "bin"
            bin_dir.mkdir()
            (bin_dir / "zig").write_text(f'#!/bin/sh\nexec "{zig_python}" -m ziglang "$@"\n')
            (bin_dir / "zig").chmod(0o755)
            self.env["PATH"] = f"{bin_dir}{os.pathsep}{self.env.get('PATH', '')}"

    # ---------------------------------------------------------------- helpers
    def run(self, argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv,
            cwd=self.work,
            env=env or self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=TIMEOUT,
        )

    def write(self, name: str, code: str) -> Path:
        dest = (self.work / name).resolve()
        if self.work.resolve() not in dest.parents:
            raise RuntimeError(f"file name {name!r} leaves the scratch folder")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(code, encoding="utf-8")
        return dest

    def default_name(self, ext: str) -> str:
        self.counter += 1
        return f"snippet_{self.counter}.{ext}"

    # -------------------------------------------------------------- languages
    def run_toml(self, b: Block):
        name = b.file_name
        if not name:
            raise RuntimeError("a toml block must name its file on its first line (`# Cargo.toml`)")
        self.write(name, b.code)
        if name == "Cargo.toml" and not (self.work / "Cargo.lock").exists():
            # Resolve dependencies to the versions the workspace is tested with.
            shutil.copy(ROOT / "Cargo.lock", self.work / "Cargo.lock")
        return None

    def run_zig(self, b: Block):
        name = b.file_name
        if not name:
            raise RuntimeError("a zig block must name its file on its first line (`// build.zig`)")
        self.write(name, b.code)
        return None

    def run_rust(self, b: Block):
        if not (self.work / "Cargo.toml").exists():
            raise RuntimeError("a rust block needs a `# Cargo.toml` block before it")
        if not re.search(r"^\s*(async\s+)?fn main\s*\(", b.code, re.M):
            raise RuntimeError("not a complete program: no `fn main`")
        self.write(b.file_name or "src/main.rs", b.code)
        env = dict(self.env, CARGO_TARGET_DIR=str(self.cargo_target))
        return self.run(["cargo", "run", "--quiet"], env=env)

    def run_c(self, b: Block):
        if not re.search(r"^\s*int\s+main\s*\(", b.code, re.M):
            raise RuntimeError("not a complete program: no `int main`")
        src = self.write(b.file_name or self.default_name("c"), b.code)
        lib = target_dir() / "release" / "libvolt_sem.a"
        if not lib.exists():
            raise RuntimeError(f"{lib} is missing: cargo build --release -p volt-sem-ffi")
        libs = subprocess.run(
            ["bash", str(ROOT / "ffi-c" / "link-flags.sh"), "libs"],
            stdout=subprocess.PIPE, text=True, check=True,
        ).stdout.split()
        cflags: list[str] = []
        if re.search(r"^\s*#\s*include\s*<uv\.h>", b.code, re.M):
            # A libuv program (the page shows its own compile line too).
            uv = subprocess.run(["pkg-config", "--cflags", "--libs", "libuv"],
                                stdout=subprocess.PIPE, text=True)
            if uv.returncode != 0:
                raise RuntimeError("libuv not found by pkg-config: make -C tests deps-libuv")
            cflags = uv.stdout.split()
        exe = src.with_suffix(".snippet-bin")
        cc = os.environ.get("CC", "cc")
        r = self.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'include'}",
                      str(src), str(lib), *libs, *cflags, "-o", str(exe)])
        if r.returncode != 0:
            return r
        return self.run([str(exe)])

    def python(self) -> Path:
        own = self.work / ".venv" / "bin" / "python"
        if own.exists():
            return own
        venv = target_dir() / "snippets" / "venv"
        wheels = sorted((ROOT / "bindings-python" / "dist").glob("volt_sem-*.whl"))
        if not wheels:
            raise RuntimeError("no wheel in bindings-python/dist: make -C bindings-python wheel")
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--force-reinstall", "--no-deps", str(wheels[-1])],
                       check=True, env=self.env)
        return venv / "bin" / "python"

    def run_python(self, b: Block):
        src = self.write(b.file_name or self.default_name("py"), b.code)
        return self.run([str(self.python()), str(src.name)])

    def run_js(self, b: Block):
        name = b.file_name
        if name is None:
            esm = re.search(r"^\s*(import|export)\s", b.code, re.M) is not None
            name = self.default_name("mjs" if esm else "cjs")
        src = self.write(name, b.code)
        pkg = self.work / "node_modules" / "volt-sem"
        if not pkg.exists():
            if not list((ROOT / "bindings-node").glob("volt-sem.*.node")):
                raise RuntimeError("no addon in bindings-node/: make -C bindings-node build")
            pkg.parent.mkdir(parents=True, exist_ok=True)
            pkg.symlink_to(ROOT / "bindings-node")
        return self.run(["node", str(src.relative_to(self.work))])

    def run_sh(self, b: Block):
        code = b.code
        default_target = (ROOT / "target").resolve()
        if target_dir() != default_target:
            # The page assumes cargo's default target dir; follow CARGO_TARGET_DIR.
            code = code.replace("$VOLT/target", "$CARGO_TARGET_DIR").replace(
                '"$VOLT"/target', '"$CARGO_TARGET_DIR"')
        return self.run(["bash", "-euo", "pipefail", "-c", code])

    def run_block(self, b: Block):
        return getattr(self, f"run_{b.lang}")(b)


def describe(b: Block) -> str:
    name = b.file_name
    return f"{b.raw_lang or 'plain'}" + (f" ({name})" if name else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--list", action="store_true", help="only list the blocks and how each is handled")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folders")
    args = ap.parse_args()

    passed = failed = skipped = 0
    for md in args.files:
        try:
            blocks = parse(md)
        except (OSError, SnippetError) as e:
            print(f"FAIL {e}")
            failed += 1
            continue
        bad = broken_links(md)
        for e in bad:
            print(f"FAIL {md}: link {e}")
        if bad:
            failed += 1
        elif not args.list:
            print(f"ok   {md}: relative links and anchors resolve")
            passed += 1
        scratch = Path(tempfile.mkdtemp(prefix="volt-snippets-"))
        runner = Runner(md, scratch)
        redis = None
        if not args.list and any("REDIS_URL" in b.code for b in blocks if b.skip is None):
            redis = LocalRedis()
            atexit.register(redis.close)  # also if a block's error escapes
            runner.env["REDIS_URL"] = redis.url
        broken = False
        for b in blocks:
            label = f"{b.where} {describe(b)}"
            if b.skip is not None:
                print(f"skip {label}: {b.skip}")
                skipped += 1
                continue
            if b.lang == "text":
                print(f"text {label}: not code")
                continue
            if b.lang not in RUNNABLE:
                print(f"FAIL {label}: no runner for language {b.raw_lang!r}: "
                      "use a supported one or mark the block `<!-- snippet: skip (reason) -->`")
                failed += 1
                continue
            if args.list:
                print(f"run  {label}")
                continue
            if broken:
                # Later blocks build on earlier ones, as for a reader.
                print(f"FAIL {label}: not run, an earlier block of this file failed")
                failed += 1
                continue
            t0 = time.monotonic()
            try:
                r = runner.run_block(b)
            except subprocess.TimeoutExpired:
                print(f"FAIL {label}: still running after {TIMEOUT} s")
                failed += 1
                broken = True
                continue
            except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
                print(f"FAIL {label}: {e}")
                failed += 1
                broken = True
                continue
            dt = time.monotonic() - t0
            if r is not None and r.returncode != 0:
                out = r.stdout.rstrip()
                print(f"FAIL {label}: exit status {r.returncode} ({dt:.1f} s)")
                if out:
                    print("\n".join("     | " + line for line in out.split("\n")[-60:]))
                failed += 1
                broken = True
                continue
            print(f"ok   {label} ({dt:.1f} s)")
            passed += 1
        if redis is not None:
            redis.close()
        if args.keep or args.list:
            if not args.list:
                print(f"     scratch folder kept: {runner.work}")
            else:
                shutil.rmtree(scratch, ignore_errors=True)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"snippets: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
