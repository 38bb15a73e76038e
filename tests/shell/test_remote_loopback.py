"""The loopback listener the sign-in's redirect comes back to."""

from __future__ import annotations

import httpx2
import trio

from bridge.shell.servers.remote import loopback


def test_the_port_is_the_same_for_a_server_on_every_run_and_differs_between_servers():
    one = loopback.redirect_port("https://a.example/mcp")
    assert one == loopback.redirect_port("https://a.example/mcp")
    assert one != loopback.redirect_port("https://b.example/mcp")
    assert all(loopback.PORTS[0] <= loopback.redirect_port(f"https://{n}.example") <
               loopback.PORTS[1] for n in range(200))
    assert loopback.redirect_uri(one) == f"http://127.0.0.1:{one}/callback"


async def test_the_callbacks_query_is_taken_and_other_paths_are_404():
    listener = await loopback.open_listener(0)
    port = listener.socket.getsockname()[1]
    got: dict[str, str] = {}

    async def wait() -> None:
        got.update(await loopback.wait_for_redirect(listener))

    async with listener, trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        async with httpx2.AsyncClient() as client:
            favicon = await client.get(f"http://127.0.0.1:{port}/favicon.ico")
            page = await client.get(f"http://127.0.0.1:{port}/callback?code=c&state=s%20t")
    assert favicon.status_code == 404
    assert page.status_code == 200 and "close this window" in page.text
    assert got == {"code": "c", "state": "s t"}
