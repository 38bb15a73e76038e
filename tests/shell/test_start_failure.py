"""A server command that cannot start: the status a shell would give, and a cause naming the fix.

These exec real (failing) commands; nothing is left running, since nothing starts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bridge.errors import ServerUnavailable
from bridge.shell.servers.child import check_command, spawn_process
from bridge.shell.servers.start_failure import NOT_EXECUTABLE, NOT_FOUND, NotStarted


def failure(argv: list[str], env: dict[str, str] | None = None,
            cwd: str | None = None) -> NotStarted:
    with pytest.raises(NotStarted) as caught:
        spawn_process(argv, env, cwd)
    return caught.value


def test_a_name_in_no_directory_of_path_is_127_naming_that_path(tmp_path: Path) -> None:
    got = failure(["no-such-server-xyz"], {"PATH": f"{tmp_path}:/nonexistent"})
    assert got.status == NOT_FOUND == 127
    assert got.cause == (f"server command not found: 'no-such-server-xyz' is in none of "
                         f"PATH={tmp_path}:/nonexistent; give the absolute path of the program")


def test_a_missing_python_names_the_python3_that_exists(tmp_path: Path) -> None:
    python3 = tmp_path / "python3"
    python3.write_text("#!/bin/sh\n")
    python3.chmod(0o755)
    got = failure(["python", "-m", "server"], {"PATH": str(tmp_path)})
    assert got.status == 127
    assert got.cause.endswith(f"give the absolute path of the program (python3 exists: "
                              f"{python3})")


def test_the_servers_own_path_is_searched_not_the_bridges(tmp_path: Path) -> None:
    # `sh` is on the bridge's PATH, but the server's PATH (its env) has no sh.
    got = failure(["sh", "-c", "true"], {"PATH": str(tmp_path)})
    assert got.status == 127 and f"PATH={tmp_path};" in got.cause


def test_a_missing_path_is_127(tmp_path: Path) -> None:
    got = failure([str(tmp_path / "gone")])
    assert got.status == 127
    assert got.cause == f"server command not found: {tmp_path / 'gone'} does not exist; " \
                        "give the right path"


def test_a_relative_path_is_taken_from_the_servers_cwd(tmp_path: Path) -> None:
    got = failure(["./server"], cwd=str(tmp_path))
    assert got.cause == f"server command not found: {tmp_path}/./server does not exist; " \
                        "give the right path"


def test_a_script_whose_interpreter_is_missing_names_its_shebang(tmp_path: Path) -> None:
    script = tmp_path / "server"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    got = failure([str(script)])
    assert got.status == 127
    assert "its interpreter was not found (#!/nonexistent/interpreter)" in got.cause


def test_a_file_without_the_execute_bit_is_126_with_chmod_and_interpreter(
        tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text("print('hi')\n")
    got = failure([str(script)])
    assert got.status == NOT_EXECUTABLE == 126
    assert got.cause == (f"server command not executable: {script}; make it executable "
                         f"(chmod +x {script}) or run it through its interpreter, e.g. "
                         f'command = ["python3", "{script}"]')


def test_a_non_executable_file_found_on_path_is_named_by_its_path(tmp_path: Path) -> None:
    (tmp_path / "server").write_text("")
    got = failure(["server"], {"PATH": str(tmp_path)})
    assert got.status == 126 and f"chmod +x {tmp_path / 'server'}" in got.cause


def test_a_directory_is_126(tmp_path: Path) -> None:
    got = failure([str(tmp_path)])
    assert got.status == 126
    assert got.cause == f"server command {tmp_path} is a directory, not a program; give the " \
                        "program's path"


def test_an_executable_in_no_known_format_is_126_run_it_through_its_interpreter(
        tmp_path: Path) -> None:
    script = tmp_path / "server"
    script.write_bytes(b"\x7fELF garbage")
    script.chmod(0o755)
    got = failure([str(script)])
    assert got.status == 126
    assert got.cause.startswith(f"server command {script} is not a program the system can run")


def test_a_vanished_working_directory_is_named(tmp_path: Path) -> None:
    got = failure([sys.executable, "-c", "pass"], cwd=str(tmp_path / "gone"))
    assert got.status == 126
    assert got.cause.startswith(f"cannot start server command {sys.executable}: cannot enter "
                                f"its working directory {tmp_path / 'gone'}")


def test_not_started_is_a_server_unavailable_exit_69() -> None:
    assert NotStarted(127, "x").code == 69
    assert isinstance(NotStarted(127, "x"), ServerUnavailable)


def test_check_command_refuses_only_an_empty_command() -> None:
    check_command(["no-such-command-xyz"])  # found out when started, and told the client
    with pytest.raises(ServerUnavailable, match="no server command given"):
        check_command([])


def test_a_nul_in_the_command_is_126_not_a_crash() -> None:
    got = failure(["server\0name"])
    assert got.status == 126 and got.cause.startswith("cannot start server command server")
