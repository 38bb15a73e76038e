"""Instructions per round trip in the core: `python instructions.py [--metrics] [--listen]
[MODE ...]`.

Must not be read as time: it counts the CPU instructions `profile_core.py` executes for one
`tools/call` round trip (valgrind's cachegrind, no cache simulation: the difference between
1001 round trips and one, divided by 1000), the one figure of the core's cost a loaded or
noisy machine does not move. Compare two trees by running each's copy with its own PYTHONPATH.
`--metrics` counts them with metrics kept, `--listen` with the client holding a listen stream
open (B and P-modern): profile_core.py's flags.
Needs `valgrind` on the PATH.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).parent
MODES = ("A", "B", "P-legacy", "P-modern")
ROUND_TRIPS = 1000
FLAGS = {"--metrics": "metrics kept", "--listen": "a listen stream open"}
"""profile_core.py's flags, as the figures name them."""


def instructions(mode: str, round_trips: int, flags: tuple[str, ...] = ()) -> int:
    """The instructions valgrind counts for `profile_core.py MODE round_trips [flags]`."""
    run = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, str(HERE / "profile_core.py"), mode, str(round_trips), *flags],
        capture_output=True, text=True, check=True, cwd=HERE,
        env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    if found is None:
        raise RuntimeError(f"valgrind printed no instruction count:\n{run.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str]) -> int:
    if shutil.which("valgrind") is None:
        print("instructions.py needs valgrind (apt install valgrind)", file=sys.stderr)
        return 69
    flags = tuple(arg for arg in argv if arg.startswith("--"))
    modes = [arg for arg in argv if not arg.startswith("--")]
    for mode in modes or MODES:
        per_trip = (instructions(mode, ROUND_TRIPS + 1, flags)
                    - instructions(mode, 1, flags)) // ROUND_TRIPS
        said = [FLAGS.get(flag, flag) for flag in flags]
        print(f"{mode}: {per_trip} instructions per tools/call round trip in the core"
              + (f" ({', '.join(said)})" if said else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
