"""Which line of a failed server's stderr says why: the line an error message quotes.

The last line is often the least useful: npm ends a failed `npx` with where its log is, many
lines after the "404 Not Found" that names the mistyped package; node ends with its version.
So a line naming an error wins over the last line: the exception line of a Python traceback
(the first line not indented after "Traceback"), else the first line that names an error.
Must stay pure: it reads lines, nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

TRACEBACK = "Traceback (most recent call last):"
# What a line that says why tends to hold: an HTTP or errno code, "not found", an error's
# own label ("Error:", "error:", "ERR!"), or a shell's "command not found". The patterns are
# compiled (and cached) by `re` at their first use, not at import: every stdio bridge imports
# this module before its first answer, and only a server that failed to start reads them.
_NAMES_AN_ERROR = (r"\b40[0-9]\b|not found|no such file|cannot find|permission denied|"
                   r"[A-Za-z]*error:|\bERR!|\bpanic\b|\bfatal\b")
_ERRNO = r"\bE(NOENT|ACCES|PERM|ADDRINUSE|CONNREFUSED|NOTFOUND)\b"
# npm's and other tools' closing lines, which name no cause.
_BOILERPLATE = r"a complete log of this run|^npm (notice|warn)"


def telling_line(lines: Sequence[str]) -> str | None:
    """The line of `lines` (a stderr's last lines, oldest first) that best says why the
    process failed, stripped; None if every line is blank."""
    kept = [line.strip() for line in lines if line.strip()]
    if not kept:
        return None
    after = _after_traceback(lines)
    if after is not None:
        return after
    for line in kept:
        if (re.search(_NAMES_AN_ERROR, line, re.IGNORECASE) or re.search(_ERRNO, line)) \
                and not re.search(_BOILERPLATE, line, re.IGNORECASE):
            return line
    return kept[-1]


def _after_traceback(lines: Sequence[str]) -> str | None:
    """A Python traceback's exception line: the last unindented line after "Traceback"."""
    starts = [at for at, line in enumerate(lines) if line.strip() == TRACEBACK]
    if not starts:
        return None
    told = [line.strip() for line in lines[starts[-1] + 1:]
            if line.strip() and not line[:1].isspace()]
    return told[-1] if told else None
