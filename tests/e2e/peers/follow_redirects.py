"""The browser of the OAuth e2e tests (named in BROWSER): GET the authorization URL and follow
its redirects, as a user's browser does when the authorization server approves at once, so
the redirect reaches the bridge's loopback listener. Cookies are kept across the redirects,
as a browser keeps them: an authorization server's login and consent pages need them.

Usage: follow_redirects.py [--after SECONDS] URL   (--after: a user slow to approve)
"""

from __future__ import annotations

import sys
import time
import urllib.request

if __name__ == "__main__":
    if sys.argv[1] == "--after":
        time.sleep(float(sys.argv[2]))
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    with browser.open(sys.argv[-1], timeout=30) as response:
        response.read()
