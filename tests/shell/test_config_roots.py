"""The `roots` setting: file:// URIs kept, paths made into them, anything else refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.cli import _overrides, parser
from bridge.config import load_settings
from bridge.errors import ConfigError


def settings_from(tmp_path: Path, text: str) -> tuple[str, ...]:
    config = tmp_path / "c.toml"
    config.write_text(text)
    return load_settings(str(config), {}).core.roots


def test_uris_are_kept_and_paths_become_file_uris(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", "/home/me")
    roots = settings_from(tmp_path, 'roots = ["file:///srv/data", "/a b/ü", "rel", "~/p"]\n')
    assert roots == ("file:///srv/data", "file:///a%20b/%C3%BC",
                     Path(os.path.join(tmp_path, "rel")).as_uri(), "file:///home/me/p")


@pytest.mark.parametrize("text", ['roots = "/srv"', 'roots = ["https://x/y"]',
                                  'roots = [""]', "roots = [3]"])
def test_anything_else_is_a_config_error_naming_the_key(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="roots"):
        settings_from(tmp_path, text + "\n")


def test_root_flags_add_up_and_override_the_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('roots = ["/from/file"]\n')
    args = parser().parse_args(["--root", "/one", "--root", "file:///two"])
    settings = load_settings(str(config), _overrides(args, []))
    assert settings.core.roots == ("file:///one", "file:///two")
    assert load_settings(None, {}).core.roots == ()
