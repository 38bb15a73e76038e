"""What a failed exchange with the endpoint means: the server gone, or a problem to name.

Must not decide what the core is told (the parts of the upstream do): it classifies
httpx2's errors and words them for the user, with the fix.
"""

from __future__ import annotations

import httpx2

from bridge.shell.servers.remote.endpoint import Network

# A transport failure that means the server went (killed, restarted, its host gone): once it
# has answered this link, the core is told it exited, and hands the session over.
GONE = (httpx2.ConnectError, httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError)
# A body cut short (the connection lost while it was read): a legacy stream that named an
# event id is resumed before this counts as the server going.
CUT = (httpx2.RemoteProtocolError, httpx2.ReadError)


def transport_problem(exc: Exception, url: str, network: Network) -> str:
    """What a failed exchange means for the user, and the fix."""
    if isinstance(exc, httpx2.ConnectTimeout):
        return (f"no connection to {url} within {network.connect_timeout:g}s "
                "(connect_timeout): check that the server runs and can be reached")
    if isinstance(exc, httpx2.ReadTimeout):
        return (f"{url} stopped sending its answer midway: no byte in "
                f"{network.read_timeout:g}s (read_timeout)")
    if isinstance(exc, httpx2.WriteTimeout):
        return (f"{url} stopped taking the request: nothing taken in "
                f"{network.read_timeout:g}s (read_timeout)")
    if isinstance(exc, httpx2.ConnectError) and is_certificate_error(exc):
        return (f"cannot connect to {url}: its TLS certificate is not trusted ({exc}); if it "
                "comes from a private CA, trust that CA: SSL_CERT_FILE=/path/to/ca.pem")
    if isinstance(exc, httpx2.ConnectError):
        return (f"cannot connect to {url} ({exc}): check that the server runs and the URL "
                "(host, port) is right")
    if isinstance(exc, httpx2.SSEError):
        return f"{url} sent an event stream the bridge cannot read ({exc})"
    if isinstance(exc, httpx2.TimeoutException):
        return f"{url} timed out ({type(exc).__name__})"
    if isinstance(exc, httpx2.RemoteProtocolError | httpx2.ReadError):
        return f"{url} dropped the connection before it answered ({exc or type(exc).__name__})"
    return f"the request to {url} failed: {type(exc).__name__}: {exc}"


def is_certificate_error(exc: BaseException) -> bool:
    """Whether a connect error is a TLS certificate the bridge does not trust (or that does
    not name the host)."""
    import ssl

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "CERTIFICATE_VERIFY_FAILED" in str(exc)
