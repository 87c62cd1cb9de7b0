"""The built wheel installs into a fresh venv with plain pip and works there."""

import os
import subprocess
import sys
import venv

import pytest

WHEEL = os.environ.get("VOLT_SEM_WHEEL")

SMOKE = """
import asyncio, volt_sem
sem = volt_sem.Semaphore(3)
async def main():
    assert await sem.acquire(2) is True
    async with sem:
        assert sem.available_permits == 0
    sem.release(2)
asyncio.run(main())
assert sem.available_permits == 3
print("ok", volt_sem.__file__)
"""


@pytest.mark.skipif(not WHEEL, reason="VOLT_SEM_WHEEL not set (run through `make test`)")
def test_wheel_installs_into_fresh_venv(tmp_path):
    env_dir = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-index", WHEEL],
        check=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    out = subprocess.run([str(py), "-c", SMOKE], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.startswith("ok ")
    assert str(env_dir) in out.stdout
    # py.typed and the stubs ship with it
    pkg = subprocess.run(
        [str(py), "-c", "import volt_sem, os; print(os.path.dirname(volt_sem.__file__))"],
        check=True, capture_output=True, text=True, cwd=tmp_path,
    ).stdout.strip()
    files = set(os.listdir(pkg))
    assert {"py.typed", "__init__.pyi", "_volt_sem.pyi"} <= files, files
    assert sys.version_info >= (3, 9)


@pytest.mark.skipif(not WHEEL, reason="VOLT_SEM_WHEEL not set (run through `make test`)")
def test_wheel_ships_the_licence_texts():
    import zipfile

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    with zipfile.ZipFile(WHEEL) as whl:
        names = whl.namelist()
        for name in ("LICENSE-MIT", "LICENSE-APACHE"):
            shipped = [n for n in names if n.endswith(".dist-info/licenses/" + name)]
            assert shipped, f"{name} is not in the wheel: {names}"
            with open(os.path.join(root, name), "rb") as f:
                assert whl.read(shipped[0]) == f.read(), f"{name} differs from the repository's"
        metadata = whl.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        assert "License-Expression: MIT OR Apache-2.0" in metadata
