"""The data of a run's figures as checks store it (``hpcval_plot_data``,
docs/reporting-plots.md); ``check`` gives None for data it cannot trust."""
import math

# the two blocks of an nccl-tests row, as the parser names them
OUT_OF_PLACE, IN_PLACE = 'out_of_place', 'in_place'
CURVES = 'busbw_by_size'        # {place: [[bytes, GB/s], ...]}
MATRICES = 'matrices'           # [{title, devices, gbps: [[GB/s | None]]}]
PER_GPU = 'per_gpu'             # [{host, gpu, gbps: {kernel: GB/s}}]
RANKS = 'ranks'                 # {devices: GPUs, hosts: nodes} of a collective


def _number(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) \
        and math.isfinite(x) else None


def collective(result):
    """busbw by message size of a parsed nccl-tests / rccl-tests run."""
    out = {}
    for place in (IN_PLACE, OUT_OF_PLACE):
        by_size = {}
        for row in result.rows:
            block = getattr(row, place)
            if row.size > 0 and block is not None \
                    and _number(block.busbw) is not None:
                by_size.setdefault(row.size, []).append(block.busbw)
        if by_size:
            out[place] = [[size, sum(v) / len(v)]
                          for size, v in sorted(by_size.items())]
    if not out:
        return {}
    ranks = getattr(result, 'ranks', ())
    return {CURVES: out, **({RANKS: {
        'devices': len(ranks), 'hosts': len({r.host for r in ranks})}}
        if ranks else {})}


def grid(devices, links):
    """The matrix of ``links`` ({(src, dst): GB/s}) over ``devices``."""
    index = {d: i for i, d in enumerate(devices)}
    cells = [[None] * len(devices) for _ in devices]
    for (src, dst), bw in links.items():
        if bw is not None and src in index and dst in index:
            cells[index[src]][index[dst]] = bw
    return cells


def transferbench(preset, result):
    """The matrices of a parsed a2a or p2p run."""
    if preset == 'a2a':
        gpus = list(result.gpus)
        return {MATRICES: [{'title': 'all-to-all, every pair at once',
                            'devices': gpus,
                            'gbps': grid(gpus, result.links)}]}
    if preset != 'p2p':
        return {}
    panels = [{'title': f'p2p {what}', 'devices': list(m.devices),
               'gbps': grid(list(m.devices), m.links)}
              for m, what in ((result.uni, 'unidirectional'),
                              (result.bidir, 'bidirectional, each direction'))
              if m is not None]
    return {MATRICES: panels} if panels else {}


def babelstream(results, kernels):
    """Each GPU's kernels in GB/s of {'<host>.gpu<N>': parsed output}."""
    out = []
    for key, result in sorted(results.items()):
        host, _, gpu = key.rpartition('.gpu')
        if not gpu.isdigit():
            continue
        out.append({'host': host, 'gpu': int(gpu),
                    'gbps': {k.lower(): result.bandwidth(k) / 1e3
                             for k in kernels}})
    return {PER_GPU: out} if out else {}


def check(data, kind):
    """The ``kind`` part of plot data ``data``, checked, or None."""
    if not isinstance(data, dict) or kind not in data:
        return None
    shape, checked = {CURVES: (dict, _curves), MATRICES: (list, _matrices),
                      PER_GPU: (list, _per_gpu)}[kind]
    return checked(data[kind]) if isinstance(data[kind], shape) else None


def _curves(data):
    out = {}
    for place in (IN_PLACE, OUT_OF_PLACE):
        points = data.get(place)
        if not isinstance(points, list):
            continue
        curve = {p[0]: p[1] for p in points
                 if isinstance(p, list) and len(p) == 2 and _number(p[0])
                 and p[0] > 0 and _number(p[1]) is not None}
        if curve:
            out[place] = curve
    return out or None


def _matrices(data):
    panels = []
    for panel in data:
        if not isinstance(panel, dict):
            return None
        devices, grid = panel.get('devices'), panel.get('gbps')
        if not (isinstance(devices, list) and isinstance(grid, list)
                and all(isinstance(d, str) for d in devices)
                and len(grid) == len(devices)
                and all(isinstance(r, list) and len(r) == len(devices)
                        for r in grid)):
            return None
        panels.append((str(panel.get('title', '')), devices,
                       [[_number(v) for v in r] for r in grid]))
    return panels or None


def _per_gpu(data):
    found = {}
    for gpu in data:
        if not (isinstance(gpu, dict) and isinstance(gpu.get('host'), str)
                and isinstance(gpu.get('gpu'), int)
                and isinstance(gpu.get('gbps'), dict)):
            return None
        found[(gpu['host'], gpu['gpu'])] = {
            str(k): v for k, v in gpu['gbps'].items()
            if _number(v) is not None}
    return found or None
