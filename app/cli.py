"""The ``switchboard`` command: ``serve``, ``migrate``, ``rekey``,
``users create|token|list|delete|export``, ``tokens list|revoke|rotate``,
``connectors list|new``.

Exit codes: 0 success, 1 the command failed (message on stderr), 2 bad usage or invalid
configuration (argparse's convention), never a traceback for an expected problem.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import shlex
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from app.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from datetime import datetime

    from connectors.registry import Registration
    from storage.engine import Database
    from storage.users import TokenInfo

T = TypeVar("T")
Handler = Callable[[argparse.Namespace, Settings], int]


class CommandError(Exception):
    """An expected failure: its message goes to stderr and the exit code is 1."""


def _unreachable(settings: Settings, exc: Exception) -> CommandError:
    from sqlalchemy.engine import make_url

    url = make_url(settings.database_url).render_as_string(hide_password=True)
    return CommandError(
        f"cannot use the database at {url}: {type(exc).__name__}: {exc}; "
        "check SWITCHBOARD_DATABASE_URL and that the server is running"
    )


def run_db(settings: Settings, work: Callable[[Database], Awaitable[T]]) -> T:
    """Run ``work(db)`` on a fresh engine after checking the schema is current."""
    from sqlalchemy.exc import SQLAlchemyError

    from storage.engine import Database
    from storage.migrate import check_current

    async def runner() -> T:
        db = Database(settings.database_url)
        try:
            try:
                migrated = await check_current(db)
            except (OSError, SQLAlchemyError) as exc:
                raise _unreachable(settings, exc) from exc
            if not migrated:
                raise CommandError("database is not migrated: run `switchboard migrate`")
            return await work(db)
        finally:
            await db.dispose()

    return asyncio.run(runner())


# --- serve -------------------------------------------------------------------------------


async def _nothing(db: Database) -> None:
    return None


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from app.log_setup import configure_logging
    from app.services import build_fernet

    # The factory reads settings from the environment, so overrides travel through it.
    overrides = {"host": args.host, "port": args.port}
    for name, value in overrides.items():
        if value is not None:
            os.environ[f"SWITCHBOARD_{name.upper()}"] = str(value)
    settings = load_settings()  # re-validate: e.g. local auth on 0.0.0.0 is refused here
    build_fernet(settings.resolved_secret_key)  # a bad SWITCHBOARD_SECRET_KEY: exit 2 now
    check_approval_overrides(settings)  # a typo must never leave a tool ungated: exit 2
    configure_logging(settings.log_level)
    # The port first: a second server started by mistake must stop before it touches the
    # database (whose running turns belong to the first).
    listening = bind_port(settings.host, settings.port)
    sockets = [listening]
    if settings.metrics_address:
        from app.settings import split_address

        try:
            sockets.append(bind_port(*split_address(settings.metrics_address)))
        except CommandError:
            listening.close()
            raise
    try:
        if not args.no_migrate:
            _migrate(settings)
        # Fail here with one clear line rather than with uvicorn's start-up traceback.
        run_db(settings, _nothing)
        from app.main import create_app
        from app.server import GracefulServer
        from app.ws_protocol import LeanWebSocketProtocol

        config = uvicorn.Config(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            log_config=None,  # keep our JSON logging
            ws=LeanWebSocketProtocol,  # uvicorn's own, lighter per idle socket
            ws_max_size=settings.max_frame_bytes,
            ws_per_message_deflate=settings.ws_per_message_deflate,
            # Header mode trusts the TCP peer's address (the authenticating proxy's):
            # uvicorn must not replace it with an X-Forwarded-For a client wrote.
            proxy_headers=settings.resolved_auth_mode != "header",
        )
        from app.gc_tuning import tune_for_serving

        tune_for_serving()  # everything is imported and built: freeze it (see the module)
        GracefulServer(config).run(sockets=sockets)
    finally:
        for bound in sockets:
            bound.close()
    return 0


def bind_port(host: str, port: int) -> socket.socket:
    """Listen on ``host:port`` or fail with what to do; the socket goes to uvicorn."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio's own loop (where uvloop is missing: Windows, PyPy)
    # turns Nagle off only on connections accepted from such a socket; with Nagle on, a
    # small frame after another waits for the client's delayed ACK (~40 ms).
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    # As uvicorn does: a restart may reuse the port while old connections linger.
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
        listening.listen(2048)
    except OSError as exc:
        listening.close()
        if exc.errno == errno.EADDRINUSE:
            raise CommandError(
                f"port {port} on {host} is already in use (is Switchboard already running?); "
                f"pick another port: `make run PORT={port + 1}` or "
                f"`switchboard serve --port {port + 1}`"
            ) from None
        raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    listening.set_inheritable(True)
    return listening


def check_approval_overrides(settings: Settings) -> None:
    """Refuse ``SWITCHBOARD_APPROVAL_OVERRIDES`` naming no tool, before the server starts.

    Only when every tool is known beforehand: the tools of a RAP server that is discovered
    at start-up are checked then (``app.streaming.check_approval_settings``).
    """
    if (
        not settings.approval_overrides
        or settings.mcp_servers  # their tools are listed at start-up too
        or any(s.tools is None for s in settings.rap_tools)
    ):
        return
    from app.streaming import check_overrides
    from connectors.approvals import agent_tools
    from connectors.registry import load_connectors

    try:
        agents = [connector.build_agent(settings) for connector in load_connectors(settings)]
    except Exception:
        return  # a broken plug-in is reported at start-up, with the rest
    names = [tool.name for tool in agent_tools(agents)]
    names += [tool.name for server in settings.rap_tools for tool in server.tools or ()]
    check_overrides(settings, names)


# --- migrate -----------------------------------------------------------------------------


def _migrate(settings: Settings) -> None:
    from sqlalchemy.exc import SQLAlchemyError

    from storage.migrate import upgrade

    try:
        upgrade(settings.database_url)
    except (OSError, SQLAlchemyError) as exc:
        raise _unreachable(settings, exc) from exc


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    _migrate(settings)
    print("database is at the latest schema")
    return 0


# --- users -------------------------------------------------------------------------------


def _usage_hint(settings: Settings, token: str) -> str:
    base = f"{settings.host}:{settings.port}"
    return (
        f"  token: {token}\n"
        "It is shown only this once; keep it secret. Use it as\n"
        f"  curl -H 'Authorization: Bearer {token}' http://{base}/api/me\n"
        f"  ws://{base}/ws/chats/<chat_id>?token={token}\n"
        "(tokens are only needed with SWITCHBOARD_AUTH_MODE=token)"
    )


def cmd_users_create(args: argparse.Namespace, settings: Settings) -> int:
    from storage.errors import DuplicateName
    from storage.users import UserRepository

    async def work(db: Database) -> tuple[str, str]:
        try:
            user, token = await UserRepository(db).create_user(args.name)
        except DuplicateName:
            raise CommandError(
                f"a user named {args.name!r} already exists; "
                f"for a new token run `switchboard users token {args.name}`"
            ) from None
        except ValueError as exc:  # e.g. an empty name
            raise CommandError(str(exc)) from None
        return user.id, token

    user_id, token = run_db(settings, work)
    print(f"created user {args.name!r} (id {user_id})")
    print(_usage_hint(settings, token))
    return 0


def cmd_users_token(args: argparse.Namespace, settings: Settings) -> int:
    from storage.users import UserRepository

    async def work(db: Database) -> str:
        users = UserRepository(db)
        user = await users.get_by_name(args.name)
        if user is None:
            raise CommandError(
                f"no user named {args.name!r}; create it with `switchboard users create {args.name}`"
            )
        return await users.create_token(user.id, args.label)

    token = run_db(settings, work)
    print(f"new token for {args.name!r}")
    print(_usage_hint(settings, token))
    return 0


def cmd_users_list(args: argparse.Namespace, settings: Settings) -> int:
    from storage.users import UserRepository

    async def work(db: Database) -> list[tuple[str, str]]:
        users = await UserRepository(db).list_users()
        return [(user.id, user.name) for user in users]

    rows = run_db(settings, work)
    if not rows:
        print("no users yet; create one with `switchboard users create NAME`")
    for user_id, name in rows:
        print(f"{user_id}\t{name}")
    return 0


def cmd_users_delete(args: argparse.Namespace, settings: Settings) -> int:
    from app.attachments.store import blob_store_for
    from storage.user_data import count_rows, delete_user

    async def work(db: Database) -> dict[str, int] | None:
        if not args.yes:
            counts = await count_rows(db, args.name)
            return counts if counts["users"] else None
        # Their attachments' bytes go too, from wherever the server keeps them.
        return await delete_user(db, args.name, blobs=blob_store_for(settings))

    counts = run_db(settings, work)
    if counts is None:
        raise CommandError(f"no user named {args.name!r}; see `switchboard users list`")
    summary = ", ".join(f"{table} {count}" for table, count in counts.items() if count)
    if not args.yes:
        raise CommandError(
            f"this deletes user {args.name!r} and all their data ({summary}) for good; "
            f"run `switchboard users delete {args.name} --yes` to do it"
        )
    print(f"deleted user {args.name!r}: {summary}")
    print(
        "a running server may accept their token or sign-in for up to 30 s more (its cache)",
        file=sys.stderr,
    )
    return 0


def cmd_users_export(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from storage.user_data import export_user

    data = run_db(settings, lambda db: export_user(db, args.name))
    if data is None:
        raise CommandError(f"no user named {args.name!r}; see `switchboard users list`")
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    try:
        # 0600: the export is the person's whole history.
        fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise CommandError(f"cannot write {args.output}: {exc.strerror}") from None
    print(f"exported user {args.name!r} to {args.output}", file=sys.stderr)
    return 0


# --- tokens ------------------------------------------------------------------------------


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else "never"


def cmd_tokens_list(args: argparse.Namespace, settings: Settings) -> int:
    from storage.users import UserRepository

    async def work(db: Database) -> list[TokenInfo] | None:
        users = UserRepository(db)
        if args.user is not None and await users.get_by_name(args.user) is None:
            return None
        return await users.list_tokens(args.user)

    tokens = run_db(settings, work)
    if tokens is None:
        raise CommandError(f"no user named {args.user!r}; see `switchboard users list`")
    if not tokens:
        print("no tokens; issue one with `switchboard users token NAME`", file=sys.stderr)
        return 0
    print("ID\tUSER\tLABEL\tCREATED\tLAST USED")
    for token in tokens:
        print(
            f"{token.id}\t{token.user_name}\t{token.label}\t"
            f"{_when(token.created_at)}\t{_when(token.last_used_at)}"
        )
    return 0


def cmd_tokens_revoke(args: argparse.Namespace, settings: Settings) -> int:
    from storage.users import UserRepository

    if not run_db(settings, lambda db: UserRepository(db).revoke_token(args.id)):
        raise CommandError(f"no token with id {args.id}; see `switchboard tokens list`")
    print(f"revoked token {args.id}")
    print("a running server may accept it for up to 30 s more (its token cache)", file=sys.stderr)
    return 0


def cmd_tokens_rotate(args: argparse.Namespace, settings: Settings) -> int:
    from storage.users import UserRepository

    rotated = run_db(settings, lambda db: UserRepository(db).rotate_token(args.id))
    if rotated is None:
        raise CommandError(f"no token with id {args.id}; see `switchboard tokens list`")
    info, token = rotated
    print(f"token {args.id} of {info.user_name!r} replaced by token {info.id} ({info.label!r})")
    print(_usage_hint(settings, token))
    return 0


def _positive_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a token id (a number)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a token id (ids start at 1)")
    return value


def _add_tokens(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tokens = sub.add_parser("tokens", help="list, revoke or rotate API tokens")
    actions = tokens.add_subparsers(dest="tokens_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every token (never the token itself)")
    listing.add_argument("--user", help="only this user's tokens")
    listing.set_defaults(handler=cmd_tokens_list)
    revoke = actions.add_parser("revoke", help="delete a token: it stops working")
    revoke.add_argument("id", type=_positive_id, help="the token's id (`tokens list`)")
    revoke.set_defaults(handler=cmd_tokens_revoke)
    rotate = actions.add_parser("rotate", help="replace a token by a new one, same label")
    rotate.add_argument("id", type=_positive_id, help="the token's id (`tokens list`)")
    rotate.set_defaults(handler=cmd_tokens_rotate)


# --- attachments -------------------------------------------------------------------------


def cmd_attachments_prune(args: argparse.Namespace, settings: Settings) -> int:
    from datetime import UTC, datetime, timedelta

    from app.attachments.store import blob_store_for
    from storage.attachments import AttachmentRepository

    cutoff = datetime.now(UTC) - timedelta(days=args.older_than_days)

    async def work(db: Database) -> int:
        keys = await AttachmentRepository(db).delete_unsent_before(cutoff)
        await blob_store_for(settings).delete(keys)
        return len(keys)

    count = run_db(settings, work)
    print(
        f"deleted {count} attachment(s) uploaded over {args.older_than_days:g} days ago and never sent"
    )
    return 0


def _add_attachments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    attachments = sub.add_parser("attachments", help="housekeeping of uploaded attachments")
    actions = attachments.add_subparsers(
        dest="attachments_command", required=True, metavar="ACTION"
    )
    prune = actions.add_parser(
        "prune", help="delete uploads that no prompt named, older than a number of days"
    )
    prune.add_argument(
        "--older-than-days",
        type=float,
        default=7.0,
        help="age in days (default 7): younger ones may still wait in someone's message box",
    )
    prune.set_defaults(handler=cmd_attachments_prune)


# --- rekey -------------------------------------------------------------------------------


def cmd_rekey(args: argparse.Namespace, settings: Settings) -> int:
    """Re-encrypt stored credentials with the first key of SWITCHBOARD_SECRET_KEY."""
    from app.services import build_fernet
    from storage.rekey import RekeyResult, rekey_credentials

    secret = settings.resolved_secret_key
    fernet = build_fernet(secret)  # a bad key: exit 2
    newest = build_fernet(next(key for key in secret.split(",") if key.strip()))

    async def work(db: Database) -> RekeyResult:
        return await rekey_credentials(db, fernet, newest)

    result = run_db(settings, work)
    print(
        f"re-encrypted {result.reencrypted} stored credential(s) with the first key; "
        f"{result.current} already used it"
    )
    if result.undecryptable:
        print(
            f"{result.undecryptable} could not be decrypted with any configured key and were "
            "left unchanged (their users must connect those accounts again)"
        )
    return 0


# --- parser ------------------------------------------------------------------------------


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="run the server (migrates the database first)")
    serve.add_argument("--host", help="bind address (default: SWITCHBOARD_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default: SWITCHBOARD_PORT or 8000)")
    serve.add_argument("--no-migrate", action="store_true", help="do not migrate at start")
    serve.set_defaults(handler=cmd_serve)


def _add_migrate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    migrate = sub.add_parser("migrate", help="create or upgrade the database schema")
    migrate.set_defaults(handler=cmd_migrate)


def _add_rekey(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rekey = sub.add_parser(
        "rekey",
        help="re-encrypt stored credentials with the first key of SWITCHBOARD_SECRET_KEY "
        "(after putting a new key first; docs/deploy.md)",
    )
    rekey.set_defaults(handler=cmd_rekey)


def _add_users(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    users = sub.add_parser("users", help="manage users and their API tokens")
    users_sub = users.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    create = users_sub.add_parser("create", help="create a user and print its first token")
    create.add_argument("name")
    create.set_defaults(handler=cmd_users_create)
    token = users_sub.add_parser("token", help="issue a new token for an existing user")
    token.add_argument("name")
    token.add_argument("--label", default="cli", help="a note stored with the token")
    token.set_defaults(handler=cmd_users_token)
    listing = users_sub.add_parser("list", help="list users")
    listing.set_defaults(handler=cmd_users_list)
    delete = users_sub.add_parser("delete", help="delete a user and all their data")
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="really delete (else: what would go)")
    delete.set_defaults(handler=cmd_users_delete)
    export = users_sub.add_parser("export", help="a user's data as JSON")
    export.add_argument("name")
    export.add_argument("--output", "-o", help="write to this file (mode 0600), not stdout")
    export.set_defaults(handler=cmd_users_export)


# --- connectors --------------------------------------------------------------------------


def cmd_connectors_list(args: argparse.Namespace, settings: Settings) -> int:
    from app.connector_setup import configured_remote_names
    from connectors.registry import register_connectors

    registration = register_connectors(settings)
    # MCP servers are started (or reached) here as the server would: their tools, or why
    # they fail, a stdio server's last stderr lines among it.
    servers = (
        asyncio.run(_check_mcp_servers(settings, registration)) if settings.mcp_servers else {}
    )
    print("NAME\tAGENT\tMODE\tACCOUNT\tTOOLS\tSTATUS")
    for connector in registration.connectors:
        account = "per-user" if connector.needs_account else "server"
        tools = ", ".join(connector.tool_descriptions) or "-"
        state, reason = servers.get(connector.name, ("connected", None))
        status = "ok" if state == "connected" else f"{state} (SWITCHBOARD_MCP_SERVERS): {reason}"
        print(
            f"{connector.name}\t{connector.agent_name}\t"
            f"{connector.mode_in(settings)}\t{account}\t{tools}\t{status}"
        )
    for failed in registration.failed:
        print(f"{failed.name}\t-\t-\t-\t-\tfailed ({failed.origin}): {failed.reason}")
    # RAP servers are contacted by the running server only: their agent and tools are
    # known there (GET /api/connectors).
    for server in settings.rap_tools:
        print(
            f"{server.name}\t-\tlive\tserver\t-\tconfigured in SWITCHBOARD_RAP_TOOLS; "
            "checked when the server starts"
        )
    problems = registration.unknown_names(settings, *configured_remote_names(settings))
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    # The server refuses to start on these; a skipped plug-in does not stop it.
    return 2 if problems else 0


async def _check_mcp_servers(
    settings: Settings, registration: Registration
) -> dict[str, tuple[str, str | None]]:
    """One connection attempt to each MCP server (each bounded by its connect_timeout),
    its connector admitted into ``registration``; each server's state and reason."""
    from connectors.mcp.runtime import McpRuntime

    runtime = McpRuntime(settings)
    try:
        await runtime.start()
        registration.admit_remote(runtime.connectors(), "SWITCHBOARD_MCP_SERVERS")
        return {status.name: (status.state, status.reason) for status in runtime.status()}
    finally:
        await runtime.aclose()


def cmd_connectors_new(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    from connectors.scaffold import ScaffoldError, write_package

    try:
        root = write_package(args.name, Path(args.dir))
    except ScaffoldError as exc:
        raise CommandError(str(exc)) from None
    # This interpreter is the server's: a plug-in installed by another pip (a system one,
    # another venv) is invisible to the server.
    python = shlex.quote(sys.executable)
    print(f"created {root}")
    print(
        "next:\n"
        f"  cd {shlex.quote(str(root))}\n"
        f"  {python} -m pip install -e .   # into this server's environment\n"
        f"  {python} -m pytest             # the contract kit and the demo tests\n"
        "  switchboard connectors list"
    )
    return 0


def _add_connectors(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    connectors = sub.add_parser("connectors", help="list connectors or start a new one")
    actions = connectors.add_subparsers(dest="connectors_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="installed connectors, their mode and tools")
    listing.set_defaults(handler=cmd_connectors_list)
    new = actions.add_parser("new", help="scaffold a connector package whose tests pass")
    new.add_argument("name", help="connector name, e.g. weather")
    new.add_argument("--dir", default=".", help="where to create switchboard-NAME/")
    new.set_defaults(handler=cmd_connectors_new)


# Each adds one subcommand; `connectors` and `bench` will be appended here.
SUBCOMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    _add_serve,
    _add_migrate,
    _add_rekey,
    _add_users,
    _add_tokens,
    _add_attachments,
    _add_connectors,
]


def installed_version() -> str:
    """The installed distribution's version: pyproject.toml's, the one place it is set."""
    from importlib.metadata import PackageNotFoundError, version

    from connectors.names import DISTRIBUTION

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "(not installed: run it from an installed package or `make run`)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="switchboard",
        description="Real-time WebSocket chat backend. Configure with SWITCHBOARD_* variables.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        settings = load_settings()
        return handler(args, settings)
    except SettingsError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    except CommandError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
