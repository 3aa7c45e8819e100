# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Pure parser for ``nvidia-smi topo -m`` text and the NVML inventory merge.

Nothing here runs a command or imports a GPU library, so every function can be tested on
recorded outputs.
"""

from __future__ import annotations

import re

# nvidia-smi underlines the header with \x1b[4m ... \x1b[0m; copies pasted from GitHub often keep
# the "[4m" and lose the escape byte, so both forms are removed.
_ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]|\[[0-9;]*m')
_LINK_CODE = re.compile(r'^(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$')
_NVLINK = re.compile(r'^NV\d+$')
_GPU = re.compile(r'^GPU(\d+)$')
_NIC_BY_INDEX = re.compile(r'^NIC\d+$')
_TRAILING = re.compile(r'CPU Affinity|NUMA Affinity|GPU NUMA ID')
_LEGEND_ENTRY = re.compile(r'^\s*(NIC\d+):\s*(\S+)\s*$')

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


def strip_ansi(text):
    return _ANSI.sub('', text)


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
    """Return (device columns, trailing column names) of the header line."""
    flat = ' '.join(line.split())
    first = _TRAILING.search(flat)
    devices = (flat[:first.start()] if first else flat).split()
    return devices, _TRAILING.findall(flat)


def _split_row(line):
    """Split a matrix row into cells: tabs when the line has them, otherwise whitespace."""
    if '\t' not in line:
        return line.split(), False
    cells = [cell.strip() for cell in line.split('\t')]
    while cells and not cells[0]:
        cells.pop(0)
    expanded = []
    for position, cell in enumerate(cells):
        parts = cell.split()
        # web copies mix tabs and spaces ("mlx5_0 PIX\tSYS", "SYS  SYS"); keep such cells apart
        if len(parts) > 1 and (position == 0 or all(_LINK_CODE.match(p) for p in parts)):
            expanded.extend(parts)
        else:
            expanded.append(cell)
    return expanded, True


def _trailing_values(cells, names, tabbed):
    """Map the cells after the link codes to the trailing columns."""
    count = len(names)
    if tabbed and len(cells) > count and count:
        # nvidia-smi pads the wide NUMA Affinity header with an extra tab, which leaves an empty
        # cell before GPU NUMA ID; the last non-empty cell is the last column.
        rest = [cell for cell in cells[count - 1:] if cell]
        cells = cells[:count - 1] + [rest[-1] if rest else '']
    cells = list(cells) + [''] * (count - len(cells))
    return dict(zip(names, cells))


def _read_matrix(lines, start, columns, trailing, warnings):
    """Read rows after the header until a blank line or the Legend."""
    links, extras = {}, {}
    for number, raw in enumerate(lines[start:], start + 1):
        text = raw.strip()
        if not text:
            if links:
                break
            continue
        if text.startswith('Legend') or text.startswith('NIC Legend'):
            break
        cells, tabbed = _split_row(raw)
        label = cells[0]
        if label not in columns:
            warnings.append('line %d is not a matrix row (output truncated?): %r' % (number, text))
            continue
        codes = cells[1:1 + len(columns)]
        if len(codes) < len(columns):
            warnings.append('row %s has %d of %d link codes (output truncated?)' % (label, len(codes), len(columns)))
        links[label] = dict((col, code) for col, code in zip(columns, codes) if code)
        extras[label] = _trailing_values(cells[1 + len(columns):], trailing, tabbed)
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
    lines = strip_ansi(text or '').splitlines()
    start = _find_header(lines)
    columns, trailing = _parse_header(lines[start])
    warnings = []
    links, extras = _read_matrix(lines, start + 1, columns, trailing, warnings)
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
