"""bench/pgo_train.sh, the training half of the profile-guided wheel (the
release's linux-x64-gnu wheel, `make wheel-pgo`), run with stand-ins for
rustc, rustup, llvm-profdata and the Python it trains with: only the script's
own control flow is under test, not a build."""

import os
import stat
import subprocess

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "bench", "pgo_train.sh")


def _exe(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_llvm_tools_missing_are_added_then_the_profile_is_merged(tmp_path):
    # A fresh rustup toolchain (the release runner's) has no llvm-profdata:
    # the script adds the llvm-tools component and goes on.
    sysroot = tmp_path / "sysroot"
    tools = sysroot / "lib" / "rustlib" / "x86_64-unknown-linux-gnu" / "bin"
    tools.mkdir(parents=True)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    _exe(bin_ / "rustc", f'echo "{sysroot}"\n')
    log = tmp_path / "rustup.log"
    # `rustup component add llvm-tools` installs an llvm-profdata that writes
    # its `merge -o OUT` file.
    _exe(
        bin_ / "rustup",
        f'echo "$@" >> "{log}"\n'
        f'mkdir -p "{tools}"\n'
        f"printf '#!/bin/sh\\ntouch \"$3\"\\n' > \"{tools}/llvm-profdata\"\n"
        f'chmod +x "{tools}/llvm-profdata"\n',
    )
    python = tmp_path / "python"
    _exe(python, "exit 0\n")  # pip install, probe.py, bench.py: nothing to do
    raw = tmp_path / "raw"
    raw.mkdir()
    out = tmp_path / "merged.profdata"
    env = dict(os.environ, PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        ["bash", SCRIPT, str(python), str(tmp_path / "x.whl"), str(raw), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert log.read_text().split() == ["component", "add", "llvm-tools"]
    assert out.exists()
