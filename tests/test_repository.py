"""What the repository promises a newcomer: the README's commands and snippet are the real ones,
and nothing in it leans on a path outside it."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# Everything the repository holds, but caches, virtual environments and the VCS itself.
TOP_LEVEL = ("pyproject.toml", "README.md", "LICENSE", ".ci", "bridge", "config",
             "systemd", "tests")


def fenced_blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README, flags=re.M | re.S)


def shell_commands(block: str) -> list[str]:
    """One command a line, continuation lines joined, as a shell reads them."""
    return [line for line in block.replace("\\\n", "").splitlines() if line.strip()]


def test_the_readme_opens_with_the_two_setup_commands() -> None:
    clone_and_demo, tests = shell_commands(fenced_blocks("sh")[0])
    assert clone_and_demo.startswith("git clone <repository-url> mcp-rosetta && cd mcp-rosetta ")
    assert "pip install . " in clone_and_demo
    assert clone_and_demo.endswith("&& mcp-rosetta demo")
    assert tests == "pip install -e '.[dev]' && python -m pytest"
    first_screen = README[:README.index("```sh")]
    assert "Python ≥ 3.11" in first_screen


def test_ci_runs_the_readme_commands_as_written() -> None:
    clone_and_demo, tests = shell_commands(fenced_blocks("sh")[0])
    printed = subprocess.run([str(ROOT / ".ci" / "run"), "--print"], capture_output=True,
                             text=True, check=True, timeout=60).stdout.splitlines()
    clone_of_this_repository = clone_and_demo.replace("<repository-url>", str(ROOT))
    assert printed[0] == clone_of_this_repository
    assert printed.index(tests) > 0
    assert printed[-2:] == ["ruff check bridge tests", "mypy"]


def test_the_library_snippet_prints_what_the_readme_says() -> None:
    (snippet,) = fenced_blocks("python")
    after = README.index(snippet) + len(snippet)
    # The output is the first text block after the snippet.
    shown = next(block for block in fenced_blocks("text") if README.index(block) > after)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, "README.md", "exec"), {})
    assert out.getvalue() == shown


def test_nothing_points_outside_the_repository() -> None:
    # The developers' shared folder sits beside their checkouts; a user's clone has none.
    # (Spelled in pieces, so that this file does not name it.)
    shared = "shared"
    pattern = re.compile("|".join(re.escape(s) for s in (
        "../" + shared, shared + "/spec", shared + "/DESIGN", shared + "/TRANSLATION",
        "/work/" + shared)))
    offenders = []
    for top in TOP_LEVEL:
        for path in [ROOT / top] if (ROOT / top).is_file() else (ROOT / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                text = path.read_text(encoding="utf-8", errors="replace")
                offenders += [f"{path.relative_to(ROOT)}: {m.group()}"
                              for m in pattern.finditer(text)]
    assert offenders == []


def test_the_documents_the_readme_links_exist() -> None:
    links = re.findall(r"\]\(((?!https?:|#)[^)]+)\)", README)
    assert {"bridge/DESIGN.md", "bridge/TRANSLATION.md", "tests/benchmarks/README.md"} <= set(links)
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_the_design_document_says_the_design_in_at_most_700_lines() -> None:
    # Measurements and their history belong in tests/benchmarks/README.md, not here.
    lines = (ROOT / "bridge" / "DESIGN.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 700


def test_the_license_file_is_the_one_pyproject_names() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    lines = (ROOT / "LICENSE").read_text().splitlines()
    assert lines[0] == "MIT License"
    assert "Copyright (c) 2026 the mcp-rosetta authors" in lines
