"""The README's install section is true for what exists (issue 35, finding 5): the
package is on no index, so it says to build a wheel with ``make dist`` and install that
(or a checkout, or a VCS URL). The test runs ``make dist`` on a copy of the tree, checks
the wheel's name is the README's and its classifiers name the Python versions CI runs,
and installs it into a fresh virtual environment whose ``ctxc`` runs from the wheel."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from built_dist import built_dist

ROOT = Path(__file__).resolve().parents[2]


def _install_block() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def test_the_readme_installs_what_make_dist_builds(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    block = _install_block()
    assert "make dist" in block
    # no command that needs the package on an index
    for line in block.splitlines():
        command = line.split("#", 1)[0].strip()
        if command.startswith("pip install"):
            target = command.removeprefix("pip install").strip().strip("'")
            assert "/" in target or "@" in target, f"needs an index: {line}"
    # ``make dist`` on a copy of the tree, once for this and the packaging tests
    (wheel,) = built_dist(tmp_path_factory).glob("*.whl")
    assert f"dist/{wheel.name}" in block, (wheel.name, block)
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(archive.read(n).decode() for n in archive.namelist() if n.endswith("/METADATA"))
    classifiers = {line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Classifier: ")}
    assert {"Programming Language :: Python :: 3.11", "Programming Language :: Python :: 3.13"} <= classifiers

    # Installed as the README says (its dependencies from this environment: no index here).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index",
                          "--quiet", str(wheel)], capture_output=True, text=True, timeout=300, check=False)
    assert pip.returncode == 0, pip.stderr
    env = {"PYTHONPATH": sysconfig.get_paths()["purelib"], "PATH": "/usr/bin:/bin",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import context_compaction, sys; print(context_compaction.__file__)"],
                           capture_output=True, text=True, timeout=120, env=env, check=False)
    assert where.returncode == 0 and where.stdout.startswith(str(venv)), where.stdout + where.stderr
    version = subprocess.run([str(venv / "bin" / "ctxc"), "--version"], capture_output=True, text=True,
                             timeout=120, env=env, check=False)
    assert version.returncode == 0 and version.stdout.startswith("ctxc "), version.stdout + version.stderr
