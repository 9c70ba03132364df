"""python3 -m mitosis ARGS... runs the mitosis command line (the binary beside libmitosis, or
$MITOSIS_BIN, or the one on $PATH) with the same arguments and exit status."""
import os
import sys

from ._lib import Error, binary


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    try:
        exe = binary()
    except Error as e:
        exe, why = None, str(e)
    else:
        why = "no mitosis binary beside %s or on $PATH (set MITOSIS_BIN)" % "libmitosis"
    if not exe:
        print("mitosis: %s" % why, file=sys.stderr)
        return 2
    sys.stdout.flush()
    os.execv(exe, [exe] + list(args))


if __name__ == "__main__":
    sys.exit(main())
