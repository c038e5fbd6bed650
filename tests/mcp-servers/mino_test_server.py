"""An MCP server for Mino's tests, written with the official Python SDK
(PyPI `mcp`, 1.x, FastMCP).

Tools: echo(text), slow(seconds) (cancellable), crash() (the process exits
in the middle of the call, no answer), big(bytes), grow() (adds the tool
`grown` and sends notifications/tools/list_changed).

    python3 mino_test_server.py --transport stdio
    python3 mino_test_server.py --transport http --port 0 [--bearer-token T]

Over HTTP it binds 127.0.0.1 (port 0: a free port), prints its URL
(streamable HTTP, path /mcp) as the first line on stdout, flushed, and
serves until it is stopped. With --bearer-token, a request without
`Authorization: Bearer T` is answered 401 (and logged to stderr without
the header's value).
"""

import argparse
import asyncio
import os
import socket
import sys

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("mino-test-server")


@server.tool()
def echo(text: str) -> str:
    """Returns the text it is given."""
    return text


@server.tool()
async def slow(seconds: float) -> str:
    """Waits the given number of seconds, then answers; a cancelled call stops waiting."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        print(f"slow: cancelled before {seconds} s", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Ends the server's process in the middle of the call: no answer ever comes."""
    print("crash: exiting in the middle of a call", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def big(bytes: int) -> str:
    """Answers with this many bytes of text."""
    return "x" * max(0, bytes)


def grown() -> str:
    """A tool that exists once grow() was called."""
    return "grown answers"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `grown`, then tells the client its tools changed."""
    server.add_tool(grown, name="grown")
    await ctx.session.send_tool_list_changed()
    print("grow: added the tool grown", file=sys.stderr, flush=True)
    return "added the tool grown"


def require_bearer(app, token: str):
    """The app behind a check of `Authorization: Bearer <token>`."""
    expected = f"Bearer {token}".encode()

    async def checked(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != expected:
                print("auth: refused a request without the expected bearer token", file=sys.stderr, flush=True)
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"a bearer token is required"})
                return
        await app(scope, receive, send)

    return checked


def serve_http(port: int, bearer_token: str | None) -> None:
    import uvicorn

    # Bound here, not by uvicorn, so that port 0's real port is known
    # before the first request and printed for whoever started the server.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    app = server.streamable_http_app()
    if bearer_token:
        app = require_bearer(app, bearer_token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"http://127.0.0.1:{bound}{server.settings.streamable_http_path}", flush=True)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


def main() -> None:
    parser = argparse.ArgumentParser(description="An MCP server for Mino's tests.")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0, help="with --transport http; 0 picks a free port")
    parser.add_argument("--bearer-token", default=None, help="with --transport http; the token every request must carry")
    args = parser.parse_args()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        serve_http(args.port, args.bearer_token)


if __name__ == "__main__":
    main()
