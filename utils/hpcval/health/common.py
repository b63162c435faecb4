"""Value helpers shared by the vendor parsers."""
import re

_NA = {'', 'n/a', '[n/a]', 'na', '[not supported]', 'not supported',
       '[unknown error]', '[insufficient permissions]', '[gpu is lost]',
       'unknown', 'none'}
_NUMBER = re.compile(r'[-+]?\d+(\.\d+)?')
_HEX = re.compile(r'0x[0-9a-fA-F]+')
_UNIT = re.compile(r'\s*\[[^\]]*\]$')
_PRINTABLE = re.compile(r'[^\x20-\x7e]')
#: A full PCI address, as drivers and tools print it (0000:4d:00.0).
BDF = r'[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]'
#: Use (%) at which a GPU counts as busy: its clock is judged then only
#: (an idle GPU clocks down, hpcval.health.judge).
BUSY_PCT = 90


#: What a text of a tool or the probe keeps (a report comes from anywhere:
#: its texts are shown cut and printable).
MESSAGE_CHARS = 200


def clean(text, most=MESSAGE_CHARS):
    """Printable ASCII of job output ``text``, at most ``most`` characters."""
    return _PRINTABLE.sub('?', str(text))[:most].strip()


def value(text):
    """A tool's field as int, float, bool or str (units dropped); None: N/A."""
    text = clean(text)
    low = text.lower()
    if low in _NA:
        return None
    if low in ('active', 'yes', 'enabled', 'true'):
        return True
    if low in ('not active', 'no', 'disabled', 'false'):
        return False
    if _HEX.fullmatch(text):
        return int(text, 16)
    head = text.split()[0] if text.split() else text
    if _NUMBER.fullmatch(head):
        return float(head) if '.' in head else int(head)
    return text


def header_name(text):
    """``memory.total [MiB]`` -> ``memory.total``."""
    return _UNIT.sub('', text.strip()).strip()


def first_line(text):
    """The first non-empty line of a tool's output (its message)."""
    return next((clean(line) for line in str(text).splitlines()
                 if line.strip()), '')
