"""``tools/install_requirements.py`` (``make env``) installs with uv, passing on the wheel folders, indexes and
constraints pip is configured with, and falls back to pip when uv fails. Run here with a stand-in environment: a
``python`` that answers ``pip config list`` and records each ``pip install``, a ``uv`` that records its arguments."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "install_requirements.py"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

PIP_CONFIG = """global.find-links='/opt/wheels'
global.extra-index-url='file:///a/simple file:///b/simple'
global.constraint='/etc/pip/constraints.txt'
global.cert='/etc/ssl/certs/ca.crt'
:env:.find-links='/opt/wheels'
"""


def _environment(tmp_path: Path, *, uv_exit: int = 0, with_uv: bool = True) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "config.txt").write_text(PIP_CONFIG)
    uv = tmp_path / "uv"                                         # what `pip install uv` puts in bin/
    uv.write_text(f'#!{shutil.which("bash")}\necho "uv $*" >> {tmp_path}/log\nexit {uv_exit}\n')
    uv.chmod(0o755)
    (bin_dir / "python").write_text(f"""#!{shutil.which('bash')}
if [ "$1 $2 $3 $4" = "-m pip config list" ]; then cat {tmp_path}/config.txt; exit 0; fi
echo "pip $*" >> {tmp_path}/log
if [ "$5" = uv ]; then cp -p {uv} {bin_dir}/uv; fi
""")
    (bin_dir / "python").chmod(0o755)
    if with_uv:
        shutil.copy2(uv, bin_dir / "uv")
    return bin_dir


def _install(bin_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(bin_dir), *args], capture_output=True, text=True,
                          timeout=60)


def test_uv_gets_what_pip_is_configured_with(tmp_path):
    bin_dir = _environment(tmp_path)
    done = _install(bin_dir, "-r", "requirements.txt")
    assert done.returncode == 0, done.stderr
    (line,) = (tmp_path / "log").read_text().splitlines()         # uv alone: pip installs nothing
    assert line.startswith(f"uv pip install -q --compile-bytecode --python {bin_dir / 'python'} ")
    options = line.split()[7:]
    assert options == ["--find-links", "/opt/wheels", "--extra-index-url", "file:///a/simple",
                       "--extra-index-url", "file:///b/simple", "--constraint", "/etc/pip/constraints.txt",
                       "--index-strategy", "unsafe-best-match", "-r", "requirements.txt"]


def test_uv_is_installed_with_pip_when_missing(tmp_path):
    bin_dir = _environment(tmp_path, with_uv=False)
    done = _install(bin_dir, "--no-deps", "-e", ".")
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "log").read_text().splitlines()
    assert log[0] == "pip -m pip install -q uv"
    assert log[1].startswith("uv pip install") and log[1].endswith("--no-deps -e .")
    assert len(log) == 2


def test_pip_installs_when_uv_fails(tmp_path):
    bin_dir = _environment(tmp_path, uv_exit=2)
    done = _install(bin_dir, "-r", "requirements.txt")
    assert done.returncode == 0
    assert "uv could not install them; trying pip" in done.stderr
    log = (tmp_path / "log").read_text().splitlines()
    assert log[0].startswith("uv pip install") and log[-1] == "pip -m pip install -q -r requirements.txt"


def test_without_arguments_it_says_how_to_call_it():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert done.returncode and "usage: python tools/install_requirements.py BIN_DIR" in done.stderr
