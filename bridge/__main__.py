"""`python -m bridge`: the same as the `mcp-rosetta` command.

Must not do anything else.
"""

import sys

from bridge.launch import main

sys.exit(main())
