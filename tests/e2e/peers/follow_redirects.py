"""The browser of the OAuth e2e tests (named in BROWSER): GET the authorization URL and follow
its redirects, as a user's browser does when the authorization server approves at once, so
the redirect reaches the bridge's loopback listener.

Usage: follow_redirects.py [--after SECONDS] URL   (--after: a user slow to approve)
"""

from __future__ import annotations

import sys
import time
import urllib.request

if __name__ == "__main__":
    if sys.argv[1] == "--after":
        time.sleep(float(sys.argv[2]))
    with urllib.request.urlopen(sys.argv[-1], timeout=30) as response:
        response.read()
