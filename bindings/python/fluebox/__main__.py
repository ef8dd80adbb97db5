"""``python3 -m fluebox ARGS...`` runs the fluebox binary with ARGS, for
example ``python3 -m fluebox run --profile strict -- python3 tool.py``. The
binary is FLUEBOX_BIN, the one the package carries, or ``fluebox`` on PATH; its exit status is ours."""

import os
import sys

from ._common import find_binary
from .errors import BinaryNotFound


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        binary = find_binary()
    except BinaryNotFound as e:
        sys.stderr.write("python3 -m fluebox: %s\n" % e)
        return 125
    sys.stdout.flush()
    sys.stderr.flush()
    # exec: the binary takes our pid, stdio, signals and exit status.
    os.execv(binary, [binary] + args)
    return 125  # not reached


if __name__ == "__main__":
    sys.exit(main())
