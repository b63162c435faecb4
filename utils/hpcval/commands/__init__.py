"""The subcommands of ``hpcval`` below the top floor (hpcval.cli
dispatches to each), and what their output shares."""
import sys

from hpcval import exits


def printable(text):
    """``text`` with no terminal escapes: names and texts of a site's file,
    a report or monitoring are data."""
    return ''.join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def refused(command, line, status=exits.INPUT):
    """``status`` (by default exits.INPUT), after ``line`` on stderr."""
    print(f'hpcval {command}: {line}', file=sys.stderr)
    return status


def print_table(rows, file=sys.stdout):
    """``rows`` (header first) as columns, indented; the last column is
    not padded."""
    rows = [[printable(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print('  ' + '  '.join(c.ljust(w) for c, w in zip(row, widths))
              + '  ' + row[-1], file=file)
