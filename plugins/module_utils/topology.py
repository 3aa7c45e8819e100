# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Pure parser for ``nvidia-smi topo -m`` text and the NVML inventory merge.

Nothing here runs a command or imports a GPU library, so every function can be tested on
recorded outputs.
"""

from __future__ import annotations

import itertools
import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.pasted_text import clean

_LINK_CODE = re.compile(r'^(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$')
_NVLINK = re.compile(r'^NV\d+$')
_GPU = re.compile(r'^GPU(\d+)$')
_NIC_BY_INDEX = re.compile(r'^NIC\d+$')
_TRAILING = re.compile(r'CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID')
_LEGEND_ENTRY = re.compile(r'^\s*(NIC\d+):\s*(\S+)\s*$')
_TOKEN = re.compile(r'\S+')
# nvidia-smi and every terminal put tab stops 8 columns apart; an author realigning a paste by hand lines the
# cells up as they look with those stops.
_TAB_STOP = 8

# PCIe distance classes, closest first. SYS (called SOC by drivers before R384) crosses the
# inter-socket link, so a NIC at that distance is never reported as near.
PCIE_RANK = {'PIX': 0, 'PXB': 1, 'PHB': 2, 'NODE': 3, 'SYS': 4, 'SOC': 4}
_FAR = PCIE_RANK['SYS']

NVML_FIELDS = ('index', 'name', 'uuid', 'pci_bus_id', 'memory_total_mib', 'driver_version')


class TopologyParseError(ValueError):
    """Nothing at all could be read from the text; ``line`` is the line that was rejected."""

    def __init__(self, message, line):
        super(TopologyParseError, self).__init__(message)
        self.line = line


def expand_list(text):
    """Expand a cpulist such as ``0-31,64-95`` into a sorted list of ints (raise ValueError)."""
    values = set()
    for part in text.split(','):
        part = part.strip()
        if '-' in part:
            low, high = part.split('-', 1)
            low, high = int(low), int(high)
            if low > high:
                raise ValueError(part)
            values.update(range(low, high + 1))
        else:
            values.add(int(part))
    return sorted(values)


def _is_header(tokens):
    return bool(tokens) and tokens[0] == 'GPU0' and (len(tokens) == 1 or not _LINK_CODE.match(tokens[1]))


def _parse_header(line):
    """Return (device columns, trailing column names, where each trailing name starts on screen)."""
    shown = line.expandtabs(_TAB_STOP)
    first = _TRAILING.search(shown)
    devices = (shown[:first.start()] if first else shown).split()
    found = list(_TRAILING.finditer(shown))
    return devices, [' '.join(match.group().split()) for match in found], [match.start() for match in found]


def _tab_cells(line):
    """The cells of a line in nvidia-smi's own layout (one tab between cells, none inside), else None."""
    if '\t' not in line:
        return None
    cells = line.split('\t')
    # nvidia-smi pads no cell but the diagonal " X "; spaces anywhere else mean someone realigned the line
    if any(cell != cell.strip() and cell != ' X ' for cell in cells):
        return None
    cells = [cell.strip() for cell in cells]
    while cells and not cells[0]:
        cells.pop(0)
    return cells


def _tabbed_trailing(cells, names):
    """Trailing values from nvidia-smi's tab cells, where an empty cell is an empty field."""
    count = len(names)
    if len(cells) > count:
        # nvidia-smi pads the wide NUMA Affinity header with an extra tab, which leaves an empty
        # cell before GPU NUMA ID; the last non-empty cell is the last column.
        rest = [cell for cell in cells[count - 1:] if cell]
        cells = cells[:count - 1] + [rest[-1] if rest else '']
    return list(cells) + [''] * (count - len(cells))


def _aligned_trailing(tokens, starts):
    """Trailing values placed by where they stand on screen: each under the header it is nearest to, in order.

    A header wider than a tab stop takes more room than an empty cell takes in a row, so a value after an
    empty cell drifts left of its header; a value halfway between two headers therefore goes to the right one.
    """
    best = None
    for columns in itertools.combinations(range(len(starts)), len(tokens)):
        cost = sum(abs(position - starts[column]) for (position, dummy), column in zip(tokens, columns))
        if best is None or cost <= best[0]:
            best = (cost, columns)
    values = [''] * len(starts)
    for (dummy, value), column in zip(tokens, best[1]):
        values[column] = value
    return values


def _trailing_values(line, width, tokens, names, starts):
    """Map the tokens after the ``width`` link codes of ``line`` to the trailing columns.

    With a value for every column there is nothing to place. Otherwise nvidia-smi's own tab layout says which
    cells are empty; a line realigned with spaces (or tabs and spaces mixed) says it by where its values stand.
    """
    if len(tokens) >= len(names) or not tokens:
        values = [value for dummy, value in tokens] + [''] * len(names)
    else:
        cells = _tab_cells(line)
        if cells is not None:
            values = _tabbed_trailing(cells[1 + width:], names)
        else:
            values = _aligned_trailing(tokens, starts)
    return dict(zip(names, values))


def _read_matrix(lines, start, header, warnings):
    """Read rows after the header until a blank line or the Legend."""
    columns, trailing, starts = header
    links, extras = {}, {}
    for number, raw in enumerate(lines[start:], start + 1):
        text = raw.strip()
        if not text:
            if links:
                break
            continue
        if text.startswith('Legend') or text.startswith('NIC Legend'):
            break
        # cells hold no spaces, so any run of tabs and spaces separates them, however the line was aligned
        tokens = [(match.start(), match.group()) for match in _TOKEN.finditer(raw.expandtabs(_TAB_STOP))]
        label = tokens[0][1]
        if label not in columns:
            warnings.append('line %d is not a matrix row (output truncated?): %r' % (number, text))
            continue
        codes = [value for dummy, value in tokens[1:1 + len(columns)]]
        if len(codes) < len(columns):
            warnings.append('row %s has %d of %d link codes (output truncated?)' % (label, len(codes), len(columns)))
        links[label] = dict(zip(columns, codes))
        extras[label] = _trailing_values(raw, len(columns), tokens[1 + len(columns):], trailing, starts)
    return links, extras


def _read_nic_legend(lines):
    legend, inside = {}, False
    for raw in lines:
        if raw.strip() == 'NIC Legend:':
            inside = True
            continue
        match = _LEGEND_ENTRY.match(raw) if inside else None
        if match:
            legend[match.group(1)] = match.group(2)
    return legend


def _value(text):
    return None if text in ('', 'N/A') else text


def _expanded(label, what, text, warnings):
    if text is None:
        return []
    try:
        return expand_list(text)
    except ValueError:
        warnings.append('%s: cannot read %s %r' % (label, what, text))
        return []


def _numa_id(label, text, warnings):
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        warnings.append('%s: cannot read GPU NUMA ID %r' % (label, text))
        return None


def _link(links, a, b):
    return links.get(a, {}).get(b) or links.get(b, {}).get(a)


def nearest(links, source, candidates):
    """Candidates at the closest PCIe class from ``source``, only when closer than SYS."""
    ranked = []
    for candidate in candidates:
        rank = PCIE_RANK.get(_link(links, source, candidate))
        if rank is not None:
            ranked.append((rank, candidate))
    best = min([rank for rank, dummy in ranked] or [_FAR])
    return [candidate for rank, candidate in ranked if rank == best and rank < _FAR]


def _gpu_entry(name, extras, links, nics, device_of, warnings):
    values = extras.get(name, {})
    cpu = _value(values.get('CPU Affinity', ''))
    numa = _value(values.get('NUMA Affinity', ''))
    return {
        'name': name,
        'index': int(_GPU.match(name).group(1)),
        'cpu_affinity': cpu,
        'cpus': _expanded(name, 'CPU affinity', cpu, warnings),
        'numa_affinity': numa,
        'numa_nodes': _expanded(name, 'NUMA affinity', numa, warnings),
        'gpu_numa_id': _numa_id(name, _value(values.get('GPU NUMA ID', '')), warnings),
        'nearest_nics': [device_of[nic] for nic in nearest(links, name, nics)],
    }


def _nic_devices(nics, legend, warnings):
    devices = {}
    for nic in nics:
        devices[nic] = legend.get(nic) if _NIC_BY_INDEX.match(nic) else nic
    unnamed = [nic for nic in nics if devices[nic] is None]
    if unnamed:
        warnings.append('no NIC Legend entry for %s: device names unknown' % ', '.join(unnamed))
    return devices


def _find_header(lines):
    for number, raw in enumerate(lines):
        if _is_header(raw.split()):
            return number
    first = next((raw.strip() for raw in lines if raw.strip()), '')
    raise TopologyParseError('no topology matrix header (a line starting with GPU0) found; first line: %r' % first, first)


def parse_topology(text):
    """Parse ``nvidia-smi topo -m`` output into (gpu_topology facts, warnings).

    Raises TopologyParseError only when no matrix header can be found at all.
    """
    lines = clean(text).splitlines()
    start = _find_header(lines)
    header = _parse_header(lines[start])
    columns = header[0]
    warnings = []
    links, extras = _read_matrix(lines, start + 1, header, warnings)
    missing = [col for col in columns if col not in links]
    if missing:
        warnings.append('no matrix row for %s (output truncated?)' % ', '.join(missing))
    gpus = [col for col in columns if _GPU.match(col)]
    nics = [col for col in columns if col not in gpus]
    devices = _nic_devices(nics, _read_nic_legend(lines[start:]), warnings)
    device_of = dict((nic, devices[nic] or nic) for nic in nics)
    facts = {
        'gpu_count': len(gpus),
        'nic_count': len(nics),
        'gpus': [_gpu_entry(gpu, extras, links, nics, device_of, warnings) for gpu in gpus],
        'nics': [{'name': nic, 'device': devices[nic], 'nearest_gpus': nearest(links, nic, gpus)} for nic in nics],
        'links': links,
        'nvlink': any(_NVLINK.match(_link(links, a, b) or '') for a in gpus for b in gpus if a != b),
        'nvml': None,
    }
    return facts, warnings


def _nvml_entry(item):
    entry = dict((field, item.get(field)) for field in NVML_FIELDS)
    entry['index'] = int(entry['index'])
    if entry['memory_total_mib'] is not None:
        entry['memory_total_mib'] = int(entry['memory_total_mib'])
    return entry


def merge_nvml(facts, inventory):
    """Return (facts with ``nvml`` set to the per-GPU inventory, warnings).

    ``inventory`` is a list of dicts with the keys in NVML_FIELDS (``index`` required);
    ``None`` means NVML was not available and leaves ``nvml`` null.
    """
    merged = dict(facts)
    if inventory is None:
        merged['nvml'] = None
        return merged, []
    entries = sorted((_nvml_entry(item) for item in inventory), key=lambda entry: entry['index'])
    merged['nvml'] = entries
    warnings = []
    if len(entries) != facts['gpu_count']:
        warnings.append('NVML reports %d GPUs but the topology matrix has %d' % (len(entries), facts['gpu_count']))
    return merged, warnings
