#!/usr/bin/env python3
# published-keys.py: a copy of the published runs' file with strategy keys added to every run that does not set them (a sensitivity sweep: perfmod reproduce --table published --published OUT).
"""Usage: scripts/published-keys.py KEY=VALUE[;KEY=VALUE...] [IN [OUT]]

Reads IN (default tests/published-runs.csv), writes OUT (default stdout) with the
keys appended to each run's keys column, except where the run sets that key itself;
the comment lines and the header pass through.  For example, the host's cost per
kernel launch over every run:

    python3 scripts/published-keys.py host_us=40 > /tmp/runs.csv
    ./run reproduce --table published --published /tmp/runs.csv
"""
import csv
import io
import os
import sys


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if len(argv) >= 2 else 2
    extra = [k for k in argv[1].split(";") if k]
    for k in extra:
        if "=" not in k or not k.split("=", 1)[0]:
            sys.stderr.write("published-keys.py: '%s': expected KEY=VALUE\n" % k)
            return 2
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = argv[2] if len(argv) > 2 else os.path.join(top, "tests", "published-runs.csv")
    with open(src, newline="") as f:
        lines = f.read().splitlines(keepends=True)
    out = io.StringIO()
    keys_col = None
    for n, line in enumerate(lines, 1):
        if line.startswith("#") or not line.strip():
            out.write(line)
            continue
        row = next(csv.reader([line]))
        if keys_col is None:
            if "keys" not in row:
                sys.stderr.write("%s:%d: no keys column in the header\n" % (src, n))
                return 2
            keys_col = row.index("keys")
            out.write(line)
            continue
        if len(row) <= keys_col:
            sys.stderr.write("%s:%d: fewer fields than the header's keys column\n" % (src, n))
            return 2
        have = {k.split("=", 1)[0] for k in row[keys_col].split(";") if k}
        add = [k for k in extra if k.split("=", 1)[0] not in have]
        row[keys_col] = ";".join([k for k in row[keys_col].split(";") if k] + add)
        w = csv.writer(out, lineterminator=line[len(line.rstrip("\r\n")):] or "\n")
        w.writerow(row)
    if len(argv) > 3:
        with open(argv[3], "w", newline="") as f:
            f.write(out.getvalue())
    else:
        sys.stdout.write(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
