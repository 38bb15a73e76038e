"""The user of device authorization in the OAuth e2e tests: open the verification page the
bridge printed (its complete form, the code in it) and submit each form the authorization
server shows (code, confirmation) as they are filled in, keeping cookies, following
redirects, until a page asks nothing more, as a user who approves at once.

Usage: device_user.py URL
"""

from __future__ import annotations

import html
import re
import sys
import urllib.parse
import urllib.request

FORM = re.compile(r'<form[^>]*action="([^"]*)"[^>]*>(.*?)</form>', re.DOTALL | re.IGNORECASE)
INPUT = re.compile(r"<input[^>]*>", re.IGNORECASE)
ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
PAGES = 6

if __name__ == "__main__":
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    url, data = sys.argv[1], None
    for _ in range(PAGES):
        with browser.open(url, data, timeout=30) as response:
            page, url = response.read().decode(), response.url
        form = FORM.search(page)
        if form is None:
            break
        fields = {}
        for tag in INPUT.findall(form[2]):
            attributes = {k.lower(): html.unescape(v) for k, v in ATTRIBUTE.findall(tag)}
            if "name" in attributes:
                fields[attributes["name"]] = attributes.get("value", "")
        url = urllib.parse.urljoin(url, html.unescape(form[1]))
        data = urllib.parse.urlencode(fields).encode()
    else:
        sys.exit("the authorization server kept asking")
