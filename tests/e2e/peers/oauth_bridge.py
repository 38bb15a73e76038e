"""The bridge as the conformance suite's OAuth scenarios start it: `python -m bridge` with the
client a user would have given for the scenario: the pre-registered client its context names
(the secret through the environment, never the command line), and a Client ID Metadata
Document URL, used where the authorization server supports them.

Usage: oauth_bridge.py ARGS... (passed on to the bridge, e.g. --url URL)
"""

from __future__ import annotations

import json
import os
import sys

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"

if __name__ == "__main__":
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    flags = ["--oauth-client-metadata-url", CLIENT_METADATA_URL]
    if context.get("client_id") and context.get("client_secret"):
        flags += ["--oauth-client-id", context["client_id"]]
        os.environ["MCP_ROSETTA_OAUTH_CLIENT_SECRET"] = context["client_secret"]
    os.execv(sys.executable, [sys.executable, "-m", "bridge", *flags, *sys.argv[1:]])
