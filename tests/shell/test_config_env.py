"""The server's environment and working directory, and the transcript: keys, flags, merging,
errors that name the key but never a value, and what the server's environment becomes."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.cli import _settings
from bridge.config import load_settings
from bridge.errors import ConfigError, UsageError
from bridge.shell.logs import started_fields
from bridge.shell.servers.environment import server_environment


def config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.toml"
    path.write_text('command = ["srv"]\n' + text)
    return str(path)


def test_env_pass_env_cwd_and_transcript_from_the_file(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    path = config(tmp_path, 'env = { API_URL = "https://x", EMPTY = "" }\n'
                            'pass_env = ["TOKEN", "AWS_*"]\ncwd = "work"\n'
                            'transcript = "t.jsonl"\n')
    shell = load_settings(path, {}).shell
    assert shell.env == (("API_URL", "https://x"), ("EMPTY", ""))
    assert shell.pass_env == ("TOKEN", "AWS_*")
    assert shell.cwd == str(tmp_path / "work")  # from the directory the bridge starts in
    assert shell.transcript == str(tmp_path / "t.jsonl")
    assert shell.config_file == path


def test_flags_add_to_the_files_env_and_pass_env(tmp_path: Path) -> None:
    path = config(tmp_path, 'env = { A = "file", B = "file" }\npass_env = ["X"]\n')
    settings, _ = _settings(["--config", path, "-e", "B=flag", "--env", "C", "--pass-env",
                             "Y", "--cwd", str(tmp_path), "--transcript", "/tmp/t"], False)
    shell = settings.shell
    assert shell.env == (("A", "file"), ("B", "file"), ("B", "flag"), ("C", None))
    assert shell.pass_env == ("X", "Y")
    assert shell.cwd == str(tmp_path) and shell.transcript == "/tmp/t"


def test_a_later_assignment_wins_and_a_bare_key_passes_the_bridges_value() -> None:
    base = {"PATH": "/bin", "C": "bridge's", "SECRET": "s"}
    env = server_environment(base, (("B", "file"), ("B", "flag"), ("C", None), ("D", None)))
    assert env == {"PATH": "/bin", "C": "bridge's", "SECRET": "s", "B": "flag"}


def test_an_allowlist_keeps_the_minimum_the_names_and_env_only() -> None:
    base = {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "LANG": "C.UTF-8", "TZ": "UTC",
            "XDG_CACHE_HOME": "/c", "CREDENTIALS_DIRECTORY": "/run/c", "TOKEN": "t",
            "AWS_KEY": "k", "SECRET": "s", "NOTIFY_SOCKET": "/run/n", "LISTEN_FDS": "1",
            "PASSED": "p"}
    env = server_environment(base, (("SET", "v"), ("PASSED", None)), ("TOKEN", "AWS_*"))
    assert env == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "LANG": "C.UTF-8",
                   "TZ": "UTC", "XDG_CACHE_HOME": "/c", "CREDENTIALS_DIRECTORY": "/run/c",
                   "TOKEN": "t", "AWS_KEY": "k", "SET": "v", "PASSED": "p"}
    assert server_environment(base, (), ())["PATH"] == "/bin"
    assert "SECRET" not in server_environment(base, (), ())


def test_the_service_managers_sockets_never_reach_the_server() -> None:
    base = {"NOTIFY_SOCKET": "/run/n", "LISTEN_PID": "1", "WATCHDOG_USEC": "1", "A": "a"}
    assert server_environment(base, (("NOTIFY_SOCKET", None),), ("NOTIFY_SOCKET", "*")) == \
        {"A": "a"}


def test_a_missing_cwd_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cwd: no such directory: .*/absent; create it"):
        load_settings(config(tmp_path, f'cwd = "{tmp_path}/absent"\n'), {})
    with pytest.raises(ConfigError, match=r"^--cwd: no such directory"):
        _settings(["--cwd", str(tmp_path / "absent"), "--", "srv"], False)


def test_a_bad_env_value_names_the_key_never_the_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as bad:
        load_settings(config(tmp_path, 'env = { TOKEN = 12345678 }\n'), {})
    assert "env: TOKEN: expected a string value" in str(bad.value)
    assert "12345678" not in str(bad.value)
    with pytest.raises(ConfigError, match="expected a variable name"):
        load_settings(config(tmp_path, 'pass_env = ["A=B"]\n'), {})


def test_bad_env_flags_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="expected a variable name"):
        _settings(["-e", "=value", "--", "srv"], False)


def test_the_first_log_line_names_env_keys_but_never_values(tmp_path: Path) -> None:
    settings, _ = _settings(["--config", config(tmp_path, ""), "-e", "TOKEN=hunter2",
                             "--pass-env", "HOME"], False)
    fields = started_fields(settings.shell)
    assert fields["command"] == ["srv"] and fields["config"] == str(tmp_path / "c.toml")
    assert fields["env"] == ["TOKEN"] and fields["pass_env"] == ["HOME"]
    assert "hunter2" not in repr(fields)
    assert isinstance(fields["version"], str) and fields["version"]
