"""The vocabulary of methods every mode shares: which requests may ask for input, which
requests ask it, and the notifications of listen streams.

Must not hold behaviour: names and sets only, each defined here once.
"""

from __future__ import annotations

from typing import Final

# mrtr.mdx §Overview: the requests a server may answer with `input_required` (and whose
# legacy counterparts a legacy server may interrupt with requests of its own).
ELIGIBLE: Final = frozenset({"tools/call", "resources/read", "prompts/get"})
# The server-to-client requests of the legacy era, the input requests of the modern one.
INPUT_METHODS: Final = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
# subscriptions.mdx: what a listen stream first says, and what a resource subscription says.
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
UPDATED: Final = "notifications/resources/updated"
