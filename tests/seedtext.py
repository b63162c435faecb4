"""Example outputs cut from the seed documents, as the documents print them.

Tests parse the seeds' own text, so nothing here may change a number: only
document markup goes.  Two layouts occur:

* Markdown: the output sits in a ``` fence; :func:`fenced_block` returns
  the fence's lines verbatim.
* reStructuredText converted from a PDF (the MI300X guide): every output
  line is a paragraph wrapped in ``:mark:`...``` roles, re-wrapped at
  about 72 columns, sometimes split over several roles (``:mark:`1 2`
  :mark:`3```), sometimes inside ``|...|`` table borders or an indented
  block.  :func:`rst_output` turns each paragraph back into one line.  The
  converter had already collapsed runs of spaces; alignment is lost, the
  tokens are not.
"""
import re
import textwrap

_ROLE = re.compile(r':mark:`((?:[^`\\]|\\.)*)`')
_ESCAPE = re.compile(r'\\(.)')
_TABLE_RULE = re.compile(r'^[+][-=+]*[+]$')


def _lines(path):
    with open(path, encoding='utf-8') as fp:
        return fp.read().splitlines()


def _find(lines, marker, start=0):
    for i in range(start, len(lines)):
        if marker in lines[i]:
            return i

    raise LookupError(f'{marker!r} not found in the seed')


def fenced_block(path, after):
    """The first ``` fenced block after the line containing ``after``."""
    lines = _lines(path)
    i = _find(lines, after)
    opening = next(j for j in range(i + 1, len(lines))
                   if lines[j].lstrip().startswith('```'))
    closing = next(j for j in range(opening + 1, len(lines))
                   if lines[j].lstrip().startswith('```'))
    return '\n'.join(lines[opening + 1:closing]) + '\n'


def _paragraphs(lines):
    paragraph = []
    for line in lines + ['']:
        if line.strip():
            paragraph.append(line)
        elif paragraph:
            yield paragraph
            paragraph = []


def _unmark(text):
    """Contents of the ``:mark:`` roles in ``text``, RST escapes undone."""
    return ' '.join(_ESCAPE.sub(r'\1', m) for m in _ROLE.findall(text))


def rst_output(path, start, end):
    """Output lines of the RST paragraphs from ``start`` to ``end``.

    ``start`` and ``end`` are texts found in the first and last paragraph
    (searched in that order).  A paragraph of ``:mark:`` roles is one
    output line; in a bordered table each ``| ... |`` row is one line;
    prose paragraphs and directives (``.. table::``) are left out.
    """
    lines = _lines(path)
    first = _find(lines, start)
    last = _find(lines, end, first)
    # widen to whole paragraphs: a marker may sit on a wrapped continuation
    while first > 0 and lines[first - 1].strip():
        first -= 1
    while last + 1 < len(lines) and lines[last + 1].strip():
        last += 1

    out = []
    for paragraph in _paragraphs(lines[first:last + 1]):
        block = textwrap.dedent('\n'.join(paragraph)).splitlines()
        if block[0].startswith('.. '):
            continue

        if _TABLE_RULE.match(block[0].strip()):
            for row in block:
                row = row.strip()
                if _TABLE_RULE.match(row):
                    continue
                cell = row.strip('|').strip()
                if cell:
                    out.append(_unmark(cell) if ':mark:' in cell else cell)
        elif ':mark:' in block[0]:
            out.append(_unmark(' '.join(line.strip() for line in block)))
        elif paragraph[0][:1].isspace():
            out.extend(block)       # literal block: dedented, kept as is

    return '\n'.join(out) + '\n'
