"""The one failure a sign-in can end with, said so that the user can act on it.

Must never carry a token, a code or a secret: its text reaches stderr and the client.
"""

from __future__ import annotations


class OAuthError(Exception):
    """A sign-in that cannot go on: what went wrong and, where there is one, the fix."""


class GrantRefused(OAuthError):
    """The authorization server refused a grant (`invalid_grant`: a code or refresh token
    expired, used or revoked): the stored tokens are dead and one new sign-in is due."""
