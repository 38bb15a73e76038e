"""The `mcp-rosetta` command: parse flags, load the config, run the bridge or the demo.

Must not hold bridge logic; its only output is --help/--version and one-line errors on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from bridge import __version__, collector
from bridge.config import (
    client_metadata_url,
    count,
    file_path,
    header_line,
    http_host,
    http_origin,
    load_settings,
    node_address,
    oauth_client_id,
    root_uri,
    seconds,
    server_url,
    size,
    socket_path,
)
from bridge.core.eras import LOG_LEVELS
from bridge.errors import BridgeError, ConfigError, UsageError
from bridge.server_options import add_server_options, server_overrides
from bridge.shell.settings import LEVELS, LOG_FORMATS, Settings

USAGE = """\
mcp-rosetta [options] [--] COMMAND [ARGS...]
       mcp-rosetta [options] --stdio "COMMAND [ARGS...]"
       mcp-rosetta [options] --url URL [--header "NAME: VALUE"]...
       mcp-rosetta serve [options] [--listen ADDRESS] [[--] COMMAND [ARGS...]]
       mcp-rosetta serve [options] [--listen ADDRESS] --url URL
       mcp-rosetta connect unix:PATH
       mcp-rosetta check [--json] [options] [--] COMMAND [ARGS...]
       mcp-rosetta check [options] --url URL [--header "NAME: VALUE"]...
       mcp-rosetta auth login|status|logout URL
       mcp-rosetta demo [--full | --server]"""

DESCRIPTION = """\
A stdio bridge between the two eras of the Model Context Protocol. Start it in
place of an MCP server; it starts COMMAND as its child and translates, so a
client that opens with `initialize` can use a 2026-07-28-only server (and the
other way round)."""

COMMANDS = """\
commands (each has its own --help):
  serve     the bridge as a daemon (Unix socket or HTTP), a session per client
  connect   a client's end of that daemon: relays stdin and stdout to it
  check     start a server, report its era, what it offers, which mode
  auth      sign in to a remote server with OAuth (login, status, logout)
  demo      a legacy client and a modern-only server, through the bridge

examples:
  mcp-rosetta -- python -m my_server --port 0
  mcp-rosetta npx -y @modelcontextprotocol/server-everything
  mcp-rosetta --stdio "python -m my_server --port 0"
  mcp-rosetta --config /etc/mcp-rosetta/weather.toml
  mcp-rosetta serve --config /etc/mcp-rosetta/weather.toml
  mcp-rosetta connect /run/mcp-rosetta/weather.sock
  mcp-rosetta check -- python -m my_server
  mcp-rosetta demo

"""
NOTES = """\
The server command starts at the first argument that is not an option, or
after --; every argument after its start is the server's. For a launcher that
eats --, leave it out, or give the command as one string to --stdio.
Durations take a unit (250ms, 5s, 2m; bare: seconds), sizes too (512KiB,
64MiB; bare: bytes). Flags override the config file. Exit status: 0 clean,
64 usage, 69 server unavailable, 78 bad config.

the example config (every key documented) and the systemd units:
  {shipped}"""
EPILOG = COMMANDS + NOTES

SERVE_DESCRIPTION = """\
The bridge as a long-running daemon on a Unix socket: every client connection
is a session of its own, with its own server process started from COMMAND (or
the config's `command`), or its own session with the remote server at --url.
With --listen http://... it is a Streamable HTTP front for clients of both
eras, before COMMAND or --url alike: each bearer token is a tenant with its own
session and server, and no tenant sees another's; without tokens the front
cannot tell users apart, and all its clients are one tenant. Under systemd it
takes the socket it is passed; SIGHUP reads the config again for new sessions."""

CHECK_DESCRIPTION = """\
Start the server as the bridge would (or reach the one at --url), find its era
(server/discover first, then `initialize`), and report what it offers: era and
protocol versions, name and version, capabilities, how many tools, prompts and
resources it lists, how long it took, what it wrote to stdout that is not
protocol, and which mode a legacy and a modern client would get. The flags and
config the bridge would be given are judged too: a pinned era the server
contradicts fails. Exit 0 if it can be served, 69 if not."""


def shipped_files() -> str:
    """Where the example config and the systemd units are: under the prefix, where
    `pip install` puts them (pyproject.toml data-files), or, for an editable install, which
    installs no data files, in the checkout itself."""
    share = os.path.join(sys.prefix, "share", "mcp-rosetta", "")
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(share) and os.path.isfile(
            os.path.join(checkout, "config", "mcp-rosetta.toml")):
        return f"{os.path.join(checkout, 'config', '')}\n  {os.path.join(checkout, 'systemd', '')}"
    return share


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            message = self._unknown(message.removeprefix("unrecognized arguments: ").split())
        raise UsageError(f"{message} (see {self.prog} --help)")

    def _unknown(self, words: list[str]) -> str:
        """Only options are left over (the first other word starts the server command):
        name the first, and the option it is likely a typo of."""
        import difflib  # only for a mistyped option

        option = words[0].split("=", 1)[0]
        near = difflib.get_close_matches(option, list(self._option_string_actions), n=1)
        return f"unknown option {option}" + (f"; did you mean {near[0]}?" if near else "")


def _seconds_flag(text: str) -> float:
    try:
        return seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


def _count_flag(text: str) -> int:
    try:
        return count(int(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


def _root_flag(text: str) -> str:
    try:
        return root_uri(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


def parser(serve: bool = False) -> argparse.ArgumentParser:
    """The bridge's parser, or with `serve` the daemon's (its own help, and its flags)."""
    p = _Parser(prog="mcp-rosetta serve" if serve else "mcp-rosetta",
                usage=_usage("serve") if serve else USAGE,
                description=SERVE_DESCRIPTION if serve else DESCRIPTION,
                epilog=(NOTES if serve else EPILOG).format(shipped=shipped_files()),
                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--version", action="version", version=f"mcp-rosetta {__version__}")
    bridge_options(p, remote=True)
    if serve:
        p.add_argument("--listen", type=_checked(socket_path), metavar="ADDRESS",
                       help="unix:PATH, or http://HOST:PORT/PATH for the Streamable "
                            "HTTP front (clients of both eras)")
        p.add_argument("--max-sessions", type=_count_flag, metavar="N",
                       help="clients served at once; one more is refused (16)")
        http = p.add_argument_group("the HTTP front (--listen http://...)")
        http.add_argument("--allow-host", type=_checked(http_host), action="append",
                          dest="allowed_hosts", metavar="HOST[:PORT]",
                          help="a Host value to accept beside the front's own names "
                               "(without a port: any port); repeatable")
        http.add_argument("--allow-origin", type=_checked(http_origin), action="append",
                          dest="allowed_origins", metavar="ORIGIN",
                          help="an Origin (scheme://host[:port]) to accept beside the "
                               "front's own names; repeatable")
        http.add_argument("--token-file", type=_checked(file_path), metavar="FILE",
                          help="bearer tokens, one a line, every request must present one "
                               "(or set MCP_ROSETTA_TOKEN; never a token on the command line)")
        http.add_argument("--max-connections", type=_count_flag, metavar="N",
                          help="connections served at once; one more gets 503 (1024)")
        http.add_argument("--max-tenants", type=_count_flag, metavar="N",
                          help="tokens served at once, each a tenant with its own session "
                               "and server (16); without tokens every client is one tenant: "
                               "the front cannot tell users apart")
        http.add_argument("--tenant-idle", type=_seconds_flag, metavar="DURATION",
                          help="a tenant with no request for this long ends (30m)")
        http.add_argument("--drain-grace", type=_seconds_flag, metavar="DURATION",
                          help="at SIGTERM, how long the front drains: /readyz says 503, "
                               "new sessions get 503 (Retry-After), what it holds is served; "
                               "then it stops (30s; 0: at once). A second signal: at once")
        http.add_argument("--max-servers-total", type=_count_flag, metavar="N",
                          help="server processes the front runs beyond each tenant's "
                               "first (64)")
        http.add_argument("--node-url", type=_checked(node_address), metavar="URL",
                          help="in a fleet (fleet_nodes, fleet_dns): this node's address "
                               "as the others reach it, http://HOST:PORT")
        http.add_argument("--fleet-affinity", choices=("tenant", "none"),
                          help="in a fleet: tenant, each tenant's 2026-07-28 requests are "
                               "served at one node, its home, the others forwarding them "
                               "(one server process a tenant, its state seen by every "
                               "request); none, each where the balancer sends it (tenant)")
        http.add_argument("--fleet-key-file", type=_checked(file_path), metavar="FILE",
                          help="the key every node of the fleet shares (or set "
                               "MCP_ROSETTA_FLEET_KEY; never on the command line)")
        from bridge.oauth_options import add_oauth_options

        add_oauth_options(p, _checked)
    return p


def check_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mcp-rosetta check", usage=_usage("check"),
                description=CHECK_DESCRIPTION,
                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--version", action="version", version=f"mcp-rosetta {__version__}")
    p.add_argument("--json", action="store_true", help="one JSON object, for machines")
    bridge_options(p, check=True, remote=True)
    return p


def _command_arguments(p: argparse.ArgumentParser) -> None:
    """The server command: from the first argument that is not an option (after a `--`
    too), or as one string in --stdio for launchers that drop every `--` they are given."""
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND",
                   help="the server command and its arguments (all that follows is the "
                        "server's)")
    p.add_argument("--stdio", type=_checked(_one_string_command), metavar='"COMMAND ARGS"',
                   help="the server command as one string, split as a shell would "
                        "(no shell runs it)")


def _one_string_command(text: str) -> list[str]:
    import shlex  # only --stdio's

    words = shlex.split(text)
    if not words:
        raise ValueError("no command in it")
    return words


def _server_command(args: argparse.Namespace) -> list[str]:
    """The command given after the options (without the `--` that may open it) or in
    --stdio; both is a usage error."""
    given = list(args.command)
    if given[:1] == ["--"]:
        given = given[1:]
    if given and args.stdio:
        raise UsageError(f"both --stdio and a server command ({given[0]} ...): give one")
    return given or list(args.stdio or ())


def _usage(command: str) -> str:
    """`command`'s lines of USAGE (as argparse indents the lines after the first)."""
    lines = [u.strip() for u in USAGE.splitlines()
             if u.strip().startswith(f"mcp-rosetta {command}")]
    return "\n       ".join(lines)


def bridge_options(p: argparse.ArgumentParser, check: bool = False,
                   remote: bool = False) -> None:
    """The options of the bridge itself; `check` takes those that change how a server is
    started and probed; `remote` adds --url and --header."""
    p.add_argument("--config", metavar="FILE",
                   help="TOML config (the installed mcp-rosetta.toml documents every key)")
    p.add_argument("--server-era", choices=("auto", "modern", "legacy"),
                   help="auto probes with server/discover (default); or pin the server's era")
    p.add_argument("--probe-timeout", type=_seconds_flag, metavar="DURATION",
                   help="wait this long for the probe before taking the server as legacy (5s)")
    if not check:
        p.add_argument("--max-servers", type=_count_flag, metavar="N",
                       help="processes of a legacy server for a modern client (a tenant): "
                            "a call that may be asked for input runs alone at one, so up "
                            "to N such calls run at once (1; 8 on the HTTP front)")
    _command_arguments(p)
    add_server_options(p, _checked, transcript=not check)
    if remote:
        group = p.add_argument_group("a remote server (instead of a server COMMAND)")
        group.add_argument("--url", type=_checked(server_url), metavar="URL",
                            help="the server is this Streamable HTTP endpoint (either era)")
        group.add_argument("--header", type=_checked(header_line), action="append",
                            dest="headers", metavar='"NAME: VALUE"',
                            help="send this header with every request to --url; ${VAR} is "
                                 "read from the environment (values are never logged); "
                                 "repeatable")
        group.add_argument("--oauth-client-id", type=_checked(oauth_client_id), metavar="ID",
                            help="sign in with this client, registered beforehand at the "
                                 "server's authorization server")
        group.add_argument("--oauth-client-secret-file", type=_checked(file_path),
                            metavar="FILE", help="that client's secret, from this file (or "
                            "$MCP_ROSETTA_OAUTH_CLIENT_SECRET; never on the command line)")
        group.add_argument("--oauth-client-metadata-url", type=_checked(client_metadata_url),
                            metavar="URL", help="sign in with this Client ID Metadata "
                            "Document where the authorization server supports them")
        group.add_argument("--oauth-client-credentials", action="store_const", const=True,
                            help="a service: sign in as the --oauth-client-id client itself "
                                 "(client credentials grant, with its secret; no browser)")
        group.add_argument("--connect-timeout", type=_seconds_flag, metavar="DURATION",
                            help="fail a request to --url that has no connection after this "
                                 "long (10s)")
        group.add_argument("--read-timeout", type=_seconds_flag, metavar="DURATION",
                            help="fail a JSON answer that stops arriving midway for this long "
                                 "(30s; waiting for an answer and event streams are bounded "
                                 "by --request-timeout only)")
        group.add_argument("--max-upstream-connections", type=_count_flag, metavar="N",
                            help="requests to --url in flight at once; more wait their turn "
                                 "(16)")
    if check:  # the rest changes nothing in how a server is reached and probed
        return
    p.add_argument("--request-timeout", type=_seconds_flag, metavar="DURATION",
                   help="fail a forwarded request unanswered after this long; 0 = never (0)")
    p.add_argument("--default-log-level", type=str.lower, choices=LOG_LEVELS, metavar="LEVEL",
                   help="MCP logLevel asked of a modern server before the client sets one")
    p.add_argument("--max-message-bytes", type=_checked(size), metavar="SIZE",
                   help="refuse a message longer than this from either peer (64MiB)")
    p.add_argument("--root", type=_root_flag, action="append", dest="roots", metavar="DIR",
                   help="a root (directory or file:// URI) to give a legacy server that asks "
                        "before the client's own roots are known; repeatable")
    p.add_argument("--log-level", type=str.lower, choices=tuple(LEVELS),
                   help="bridge log level (info)")
    p.add_argument("--log-format", choices=LOG_FORMATS,
                   help="stderr log format; auto = console on a TTY, else JSON lines")


def _checked(check: Any) -> Any:
    def flag(text: str) -> Any:
        try:
            return check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None

    return flag


def _overrides(args: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    keys = ("server_era", "probe_timeout", "request_timeout", "default_log_level",
            "max_message_bytes", "log_level", "log_format", "listen", "max_sessions",
            "token_file", "max_connections", "max_tenants", "tenant_idle", "max_servers",
            "max_servers_total", "url", "drain_grace",
            "connect_timeout", "read_timeout", "max_upstream_connections", "oauth_client_id",
            "oauth_client_secret_file", "oauth_client_metadata_url",
            "oauth_client_credentials", "node_url", "fleet_key_file", "fleet_affinity")
    values: dict[str, Any] = {k: getattr(args, k) for k in keys
                              if getattr(args, k, None) is not None}
    for repeated in ("roots", "allowed_hosts", "allowed_origins", "headers"):
        if getattr(args, repeated, None):
            values[repeated] = tuple(getattr(args, repeated))
    if getattr(args, "oauth_issuer", False) is not False:  # serve's parser
        from bridge.oauth_options import oauth_overrides

        values.update(oauth_overrides(args))
    values.update(server_overrides(args))
    if command:
        values["command"] = tuple(command)
    return values


def _run(argv: Sequence[str]) -> int:
    command, rest = (argv[0], list(argv[1:])) if argv else ("", [])
    if command == "help":
        return _run([*rest, "--help"])
    if command == "demo":
        from bridge.demo.run import main as demo

        collector.resume()
        return demo(rest)
    if command == "connect":
        return _connect(rest)
    if command == "serve":
        return _serve(rest)
    if command == "check":
        return _check(rest)
    if command == "auth":
        return _auth(rest)
    return _bridge(list(argv))


def _is_bridge(argv: Sequence[str]) -> bool:
    """Whether `argv` is the stdio bridge's (not a command's such as serve or check)."""
    return not argv or argv[0] not in ("demo", "connect", "serve", "check", "auth", "help")


def _settings(argv: list[str], serve: bool, p: argparse.ArgumentParser | None = None,
              ) -> tuple[Settings, Callable[[], Settings]]:
    """The settings the flags and the config file give (parsed by `p`, by default the
    bridge's or the daemon's parser), and how to read them again."""
    p = p or parser(serve)
    args = p.parse_args(argv)
    overrides = _overrides(args, _server_command(args))

    def load() -> Settings:
        settings = load_settings(args.config, overrides)
        if settings.shell.command and settings.shell.url:
            raise UsageError("both a server command and --url (url = ...): give one of them")
        if settings.shell.url:
            return settings
        if not settings.shell.command:
            if args.config:  # the file was meant to name it: a config error, like a bad key
                raise ConfigError(f"config {args.config}: no server command: set command = "
                                  "[...] in the file, or give one after the options")
            raise UsageError(f"no server command: {p.prog} [options] [--] COMMAND [ARGS...]")
        return settings

    return load(), load


def _bridge(argv: list[str]) -> int:
    settings, _ = _settings(argv, serve=False)
    from bridge.shell.services.process import run_stdio

    return run_stdio(settings.core, settings.shell)


def _serve(argv: list[str]) -> int:
    settings, reload = _settings(argv, serve=True)
    from bridge.shell.services.daemon_main import run_daemon

    collector.resume()  # before the daemon's weeks of serving
    return run_daemon(settings, reload)


def _check(argv: list[str]) -> int:
    p = check_parser()
    settings, _ = _settings(argv, serve=False, p=p)
    from bridge.shell.check import run_check

    collector.resume()
    return run_check(settings, as_json=p.parse_args(argv).json)


def _auth(argv: list[str]) -> int:
    p = _Parser(prog="mcp-rosetta auth", usage=_usage("auth"),
                description="Sign in to a remote server that asks for OAuth (login: opens "
                            "the browser, stores the tokens for later runs, the daemon and "
                            "the HTTP front), show what is stored (status, never a token), "
                            "or forget it (logout).")
    p.add_argument("action", choices=("login", "status", "logout"))
    p.add_argument("url", type=_checked(server_url), metavar="URL")
    p.add_argument("--oauth-client-id", type=_checked(oauth_client_id), metavar="ID")
    p.add_argument("--oauth-client-secret-file", type=_checked(file_path), metavar="FILE")
    p.add_argument("--oauth-client-metadata-url", type=_checked(client_metadata_url),
                   metavar="URL")
    p.add_argument("--oauth-client-credentials", action="store_true")
    p.add_argument("--device", action="store_true",
                   help="login on a machine with no browser: show a code to enter on another "
                        "device (device authorization), where the server offers it")
    args = p.parse_args(argv)
    from bridge.shell.servers.remote.endpoint import oauth_client
    from bridge.shell.settings import ShellConfig

    given = oauth_client(ShellConfig(
        url=args.url, oauth_client_id=args.oauth_client_id,
        oauth_client_secret_file=args.oauth_client_secret_file,
        oauth_client_metadata_url=args.oauth_client_metadata_url,
        oauth_client_credentials=args.oauth_client_credentials), os.environ)
    from bridge.shell.servers.remote.auth_command import run_auth  # a short command: trio as it is

    return run_auth(args.action, args.url, given, device=args.device)


def _connect(argv: list[str]) -> int:
    p = _Parser(prog="mcp-rosetta connect", usage="mcp-rosetta connect unix:PATH",
                description="Relay this process's stdin and stdout to a running "
                            "`mcp-rosetta serve`: the command a client config launches.",
                epilog="Exit status: 0 when the client ended first, 64 for an address that "
                       "is not a Unix socket's, 69 when the daemon is not there or ended the "
                       "connection first (refused, stopped, session ended).")
    p.add_argument("address", metavar="unix:PATH",
                   help="the daemon's Unix socket: unix:PATH, or the path itself")
    address = p.parse_args(argv).address
    from bridge.shell.services.connect import run_connect

    collector.resume()
    return run_connect(address)


def main(argv: Sequence[str] | None = None, *, answer_client: bool = False) -> int:
    """The command for all but `connect ADDRESS` (bridge/launch.py); returns the exit status.
    With `answer_client` (the process a client launched), a bridge that cannot start also
    answers the client's first request with its error, which a client shows where it may
    never show the bridge's stderr."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        return _run(args)
    except BridgeError as exc:
        sys.stderr.write(f"mcp-rosetta: {exc}\n")
        sys.stderr.flush()
        if answer_client and _is_bridge(args) and isinstance(exc, UsageError | ConfigError):
            from bridge.shell.clients.usage_answer import answer_first_request

            answer_first_request(str(exc), exc.code)
        return exc.code
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
