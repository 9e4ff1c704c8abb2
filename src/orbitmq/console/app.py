"""`orbitmq console -n NAMESRV [--host 127.0.0.1] [--port 8080]`: the web console.

An aiohttp app: the JSON API of console/api.py under /api and one static page whose chart app.js draws
as SVG (no CDN, works offline). It has no login of its own: it listens on 127.0.0.1 unless told
otherwise, and with ACL on it signs as the account given (`build_app`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

from orbitmq.admin.api import AdminClient
from orbitmq.admin.cli import add_security_options
from orbitmq.console.api import ADMIN, add_routes

STATIC = Path(__file__).parent / "static"


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html")


def build_app(
    namesrv: str,
    *,
    timeout: float = 5.0,
    access_key: str | None = None,
    secret_key: str | None = None,
    tls: bool = False,
) -> web.Application:
    """The console app. With ACL on in the cluster, every request it makes (reads and the admin actions)
    is signed with `access_key`/`secret_key`: the brokers decide what the console may do."""
    app = web.Application()

    async def open_admin(app: web.Application) -> None:
        app[ADMIN] = AdminClient(
            namesrv, timeout=timeout, access_key=access_key, secret_key=secret_key, tls=tls
        )

    async def close_admin(app: web.Application) -> None:
        await app[ADMIN].close()

    app.on_startup.append(open_admin)
    app.on_cleanup.append(close_admin)
    add_routes(app)
    app.router.add_get("/", _index)
    app.router.add_static("/static/", STATIC)
    return app


async def start_console(namesrv: str, host: str, port: int, **security: Any) -> tuple[web.AppRunner, str]:
    """Serve the console on the running loop; returns the runner (cleanup() stops it) and its URL.
    `security`: access_key, secret_key, tls (see build_app)."""
    runner = web.AppRunner(build_app(namesrv, **security), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port
    return runner, f"http://{host}:{bound}/"


async def run(namesrv: str, host: str, port: int, **security: Any) -> None:
    from orbitmq.transport import loop

    runner, url = await start_console(namesrv, host, port, **security)
    try:
        await loop.wait_for_stop_signal([f"console listening on {url}"])
    finally:
        await runner.cleanup()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="orbitmq console", description="Serve the orbitmq web console.")
    parser.add_argument("-n", "--namesrv", required=True, help="nameserver address(es), ';'-separated")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="listen port (default 8080; 0 = a free port)")
    add_security_options(parser)
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    """Serve the console until stopped. The first stdout line is `console listening on http://HOST:PORT/`
    (port 0 picks a free one; tests read it back). `orbitmq serve --console-port PORT` runs the same app
    inside the serve process.
    """
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    from orbitmq.transport import loop

    if args.access_key and not args.secret_key:
        print("orbitmq console: --access-key needs --secret-key (or ORBITMQ_SECRET_KEY)", file=sys.stderr)
        return 2
    security = {"access_key": args.access_key, "secret_key": args.secret_key, "tls": args.tls}
    try:
        loop.run(run(args.namesrv, args.host, args.port, **security))
    except OSError as exc:
        print(f"orbitmq console: {exc}", file=sys.stderr)
        return 1
    return 0
