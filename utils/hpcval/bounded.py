"""YAML hpcval reads, bounded in size, depth and size with aliases expanded
(docs/security.md): the composed node graph is walked once, each node's
expanded size counted once, before anything is built from it."""
import yaml

#: A reference file is a few kB; the largest written by calibrate ~100 kB.
MAX_BYTES = 16 * 2**20
#: Nodes of the document with every alias expanded.
MAX_NODES = 1_000_000
#: Mappings and lists inside one another.
MAX_DEPTH = 64


#: libyaml's parser where PyYAML has it: a fifth of the pure-Python
#: parser's CPU, and every ReFrame and hpcval process parses the references
SAFE_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


class TooBig(ValueError):
    """A document beyond the bounds; the message says which."""


def load(text, loader=SAFE_LOADER):
    """The YAML document ``text`` built by ``loader``, or TooBig/YAMLError."""
    if len(text) > MAX_BYTES:
        raise TooBig(f'{len(text)} characters, {MAX_BYTES} at most')
    parser = loader(text)
    try:
        node = parser.get_single_node()
        if node is None:
            return None
        _check(node)
        return parser.construct_document(node)
    finally:
        parser.dispose()


def _children(node):
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _check(root):
    """Raise TooBig past MAX_NODES, MAX_DEPTH, or for a self-reference."""
    size, depth = {}, {}
    # iterative post-order: a deep document cannot exhaust the stack
    stack, open_ = [(root, False)], set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[key] > MAX_NODES:
                raise TooBig(f'more than {MAX_NODES} values with every '
                             f'alias expanded (line {_line(node)})')
            if depth[key] > MAX_DEPTH:
                raise TooBig(f'nested more than {MAX_DEPTH} deep (line '
                             f'{_line(node)})')
            continue
        if key in size:
            continue
        if key in open_:
            raise TooBig(f'an alias refers to a value that holds it (line '
                         f'{_line(node)})')
        open_.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node)
                     if id(k) not in size)


def _line(node):
    mark = getattr(node, 'start_mark', None)
    return mark.line + 1 if mark is not None else '?'
