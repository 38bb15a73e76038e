"""The package as PyPI would ship it: `python -m build` makes an sdist and a wheel twine
accepts, and the wheel, installed alone in an empty virtual environment far from this
checkout, runs the demo, checks the demo server, and names its shipped files.

Must not lean on the checkout once built: the commands run in a temporary directory, with no
PYTHONPATH, from the new environment's bin/.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import venvs

from bridge import __version__

TIMEOUT = 600


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel built from it, as `python -m build` makes them."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(venvs.REPO_ROOT)], cwd=out)
    return out


def test_build_makes_an_sdist_and_a_wheel_twine_accepts(dist: Path) -> None:
    names = sorted(p.name for p in dist.iterdir())
    assert names == [f"mcp_rosetta-{__version__}-py3-none-any.whl",
                     f"mcp_rosetta-{__version__}.tar.gz"]
    checked = run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())],
                  cwd=dist)
    assert checked.stdout.count("PASSED") == 2


def test_the_wheel_alone_in_an_empty_venv_runs_demo_check_and_help(
        dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    env_dir = tmp_path / "env"
    run([sys.executable, "-m", "venv", str(env_dir)], cwd=tmp_path)
    bin_dir = env_dir / "bin"
    run([str(bin_dir / "pip"), "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        cwd=tmp_path)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    clean["PATH"] = os.pathsep.join((str(bin_dir), "/usr/bin", "/bin"))
    where = run([str(bin_dir / "python"), "-c", "import bridge; print(bridge.__file__)"],
                cwd=tmp_path, env=clean).stdout.strip()
    assert Path(where).is_relative_to(env_dir)  # not this checkout

    demo = run(["mcp-rosetta", "demo"], cwd=tmp_path, env=clean).stdout
    assert "With the bridge: mcp-rosetta -- mcp-rosetta demo --server" in demo

    check = run(["mcp-rosetta", "check", "--", "mcp-rosetta", "demo", "--server"],
                cwd=tmp_path, env=clean).stdout.splitlines()
    assert check[-1] == "ok: mcp-rosetta can serve it"
    assert "  era           modern (2026-07-28), answered server/discover" in check

    help_lines = run(["mcp-rosetta", "--help"], cwd=tmp_path, env=clean).stdout.splitlines()
    share = env_dir / "share" / "mcp-rosetta"
    assert help_lines[-1].strip() == f"{share}{os.sep}"
    assert {p.name for p in share.iterdir()} == {
        "mcp-rosetta.toml", "mcp-rosetta@.service", "mcp-rosetta@.socket",
        "mcp-rosetta-http@.service", "mcp-rosetta-http@.socket", "prometheus", "grafana"}
    assert {p.name for p in (share / "prometheus").iterdir()} == {
        "mcp-rosetta-alerts.yml", "mcp-rosetta-alerts.test.yml"}
    assert {p.name for p in (share / "grafana").iterdir()} == {"mcp-rosetta-dashboard.json"}
    shipped = share / "prometheus" / "mcp-rosetta-alerts.yml"
    assert shipped.read_bytes() == (venvs.REPO_ROOT / "config" / "prometheus"
                                    / "mcp-rosetta-alerts.yml").read_bytes()
    version = run(["mcp-rosetta", "--version"], cwd=tmp_path, env=clean).stdout
    assert version == f"mcp-rosetta {__version__}\n"
    assert_the_command_imports_only_the_relay(bin_dir, tmp_path, clean)

    # The starts left nothing in the package: once uninstalled, no `bridge` directory is left
    # to hide another install.
    run([str(bin_dir / "pip"), "uninstall", "--quiet", "--yes", "mcp-rosetta"], cwd=tmp_path)
    assert not Path(where).parent.exists()


def assert_the_command_imports_only_the_relay(bin_dir: Path, cwd: Path,
                                              env: dict[str, str]) -> None:
    """The installed command is the console script pip generates for the entry point (its
    first line the environment's python), and `connect` imports nothing between that script's
    own `re` and bridge.launch (but the collector's switch, which bridge.launch itself
    imports), nor trio, structlog, argparse or orjson after."""
    script = (bin_dir / "mcp-rosetta").read_text()
    assert script.startswith(f"#!{bin_dir / 'python'}")
    assert "from bridge.launch import main" in script
    timed = {**env, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(["mcp-rosetta", "connect", f"unix:{cwd / 'no-daemon.sock'}"],
                          cwd=cwd, env=timed, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert done.returncode == 69, done.stderr  # no daemon there: EX_UNAVAILABLE
    assert "mcp-rosetta: cannot connect to" in done.stderr
    imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and not line.endswith("package")]
    after_site = imported[imported.index("site") + 1:]
    script_imports = after_site[:after_site.index("bridge")]
    assert script_imports[-1] == "re", after_site  # the generated script's own
    # bridge.launch's one import, the builtin gc's switch (bridge/collector.py), listed first
    assert after_site[len(script_imports):][:5] == [
        "bridge", "__future__", "gc", "bridge.collector", "bridge.launch"], after_site
    assert not {"trio", "structlog", "argparse", "orjson"} & set(imported)
