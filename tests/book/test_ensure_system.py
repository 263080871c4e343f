"""``tools/ensure_system.sh`` installs what is missing from the system: ``make book`` asks only for npm (the book's
JavaScript), ``make test`` for npm and the browser of the browser test. Run here with a PATH of stand-ins that
record what the script asked of apt-get."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "ensure_system.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _system(tmp_path: Path) -> tuple[Path, Path]:
    """Stand-ins: npm present, no browser, root (``id``), and an apt-get that writes its arguments to a log."""
    bin_dir, log = tmp_path / "bin", tmp_path / "apt.log"
    bin_dir.mkdir()
    stands = {"npm": "exit 0", "id": "echo 0", "apt-get": f'echo "$*" >> {log}'}
    for name, body in stands.items():
        (bin_dir / name).write_text(f"#!{shutil.which('bash')}\n{body}\n")
        (bin_dir / name).chmod(0o755)
    (bin_dir / "env").symlink_to(shutil.which("env"))           # how the script runs apt-get
    return bin_dir, log


def _run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([shutil.which("bash"), str(SCRIPT), str(bin_dir), *args], env=env, capture_output=True,
                          text=True, timeout=60)


def test_the_book_asks_only_for_npm(tmp_path):
    bin_dir, log = _system(tmp_path)
    done = _run(bin_dir, "npm")
    assert done.returncode == 0, done.stderr
    assert not log.exists(), "no browser is installed for the book"


def test_the_tests_install_the_missing_browser(tmp_path):
    bin_dir, log = _system(tmp_path)
    done = _run(bin_dir, "all")
    assert done.returncode == 0, done.stderr
    assert "no Chromium found" in done.stdout
    assert log.read_text().splitlines()[-1] == "install -y -qq chromium"
    assert _run(bin_dir).returncode == 0 and log.read_text().count("chromium") == 2, "all is the default"


def test_an_unknown_request_is_named(tmp_path):
    bin_dir, log = _system(tmp_path)
    done = _run(bin_dir, "browser")
    assert done.returncode == 2
    assert "npm or all, not 'browser'" in done.stderr
    assert not log.exists()
