# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""``nvidia-smi -q`` as text - the form people paste into tickets - read into what ``parse_nvidia_smi_xml`` returns for
``nvidia-smi -q -x``, and the reader of saved nvidia-smi output that takes either form.

The text is an indented tree (``Section`` lines, ``Key<spaces>: value`` lines, 4 spaces a level) whose labels are the
XML element names in words: ``ECC Errors`` / ``Volatile`` / ``DRAM Uncorrectable`` is
``<ecc_errors><volatile><dram_uncorrectable>``. The labels differ between drivers as the tags do (``Clocks Event
Reasons`` from R535, ``Clocks Throttle Reasons`` before; ``Ecc Mode`` in R460, ``ECC Mode`` later), so labels are
matched without regard to case.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health, pasted_text
from ansible_collections.hpcfabric.cluster.plugins.module_utils.lspci_links import sysfs_link_speed

FORMS = 'nvidia-smi -q -x (XML) or nvidia-smi -q (text)'

_BANNER = re.compile(r'^=+\s*NVSMI LOG\s*=+$')
_GPU = re.compile(r'^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$')
# nvidia-smi pads every key to one column, so a space always comes before the colon: "Bus Id    : 00000000:06:00.0"
_FIELD = re.compile(r'^(\s*)(\S.*?)\s+:\s*(.*?)\s*$')

# The clock event reasons as the text words them -> the names the XML gives them (after clocks_event_reason_)
_CLOCK_REASONS = {'idle': 'gpu_idle', 'applications clocks setting': 'applications_clocks_setting',
                  'sw power cap': 'sw_power_cap', 'hw slowdown': 'hw_slowdown',
                  'hw thermal slowdown': 'hw_thermal_slowdown', 'hw power brake slowdown': 'hw_power_brake_slowdown',
                  'sync boost': 'sync_boost', 'sw thermal slowdown': 'sw_thermal_slowdown',
                  'display clock setting': 'display_clocks_setting'}
# The uncorrectable counters of one ECC scope, as gpu_health._UNCORRECTABLE reads them from the XML
_UNCORRECTABLE = ('dram uncorrectable', 'sram uncorrectable', 'sram uncorrectable parity',
                  'sram uncorrectable sec-ded')
# PCIe generation -> GT/s: what sysfs's current_link_speed says of the same link
_GEN_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


def _node(label, value, indent):
    return {'label': label.lower(), 'value': value, 'indent': indent, 'children': []}


def _tree(lines):
    """The GPUs of the text as trees, and the (line number, line) pairs that are neither the text's nor a GPU's."""
    gpus, unreadable = [], []
    stack = []
    for number, line in lines:
        if not line.strip():
            continue
        expanded = line.expandtabs(4)
        indent = len(expanded) - len(expanded.lstrip())
        gpu = _GPU.match(expanded)
        if gpu:
            root = _node('gpu', gpu.group(1), 0)
            gpus.append(root)
            stack = [root]
            continue
        field = _FIELD.match(expanded)
        if indent == 0:
            # the banner and the header's Timestamp, Driver Version ... lines are nvidia-smi's; a prompt is not
            if not (_BANNER.match(expanded.strip()) or field):
                unreadable.append((number, line))
            # what follows belongs to no GPU until the next GPU line (a second output pasted after the first)
            stack = []
            continue
        if not stack:
            unreadable.append((number, line))
            continue
        node = _node(field.group(2), field.group(3), indent) if field else _node(expanded.strip(), None, indent)
        while len(stack) > 1 and stack[-1]['indent'] >= indent:
            stack.pop()
        stack[-1]['children'].append(node)
        stack.append(node)
    return gpus, unreadable


def _find(node, *labels):
    for label in labels:
        node = next((child for child in (node or {}).get('children', []) if child['label'] == label), None)
    return node


def _text(node, *labels):
    """A value as gpu_health._text reads the XML's: None when absent, empty, N/A or "Requested functionality..."."""
    found = _find(node, *labels)
    value = (found or {}).get('value')
    if value is None or value in ('', 'N/A', '[N/A]') or value.startswith('Requested functionality'):
        return None
    return value


def _count(node, *labels):
    value = _text(node, *labels)
    return int(value) if value is not None and value.isdigit() else None


def _yes(node, *labels):
    value = _text(node, *labels)
    return None if value is None else value.lower() == 'yes'


def _fields(node):
    """Every labelled value under ``node``, at any depth (the text nests HW Thermal Slowdown under HW Slowdown)."""
    for child in (node or {}).get('children', []):
        if child['value'] is not None:
            yield child
        yield from _fields(child)


def _clock_reasons(gpu):
    reasons = {}
    for section in ('clocks event reasons', 'clocks throttle reasons'):
        for field in _fields(_find(gpu, section)):
            if field['value'] in ('Active', 'Not Active'):
                name = _CLOCK_REASONS.get(field['label'], re.sub(r'\W+', '_', field['label']).strip('_'))
                reasons[name] = field['value'] == 'Active'
    return reasons


def _ecc_scope(gpu, scope):
    node = _find(gpu, 'ecc errors', scope)
    counts = [_count(node, label) for label in _UNCORRECTABLE] + [_count(node, 'double bit', 'total')]
    counts = [count for count in counts if count is not None]
    return sum(counts) if counts else None


def _remapped_rows(gpu):
    node = _find(gpu, 'remapped rows')
    if node is None or not node['children']:
        return None
    return {'pending': _yes(node, 'pending'), 'failure': _yes(node, 'remapping failure occurred'),
            'uncorrectable': _count(node, 'uncorrectable error')}


def _retired_pages(gpu):
    node = _find(gpu, 'retired pages')
    pending = [_yes(node, label) for label in ('pending page retirement', 'pending page blacklist')]
    if all(flag is None for flag in pending):
        return None
    return {'pending': any(pending), 'double_bit': _count(node, 'double bit ecc')}


def _link(pci, max_gen, current_gen, max_width, current_width):
    """A GPU's link as the sysfs reader gives it, from nvidia-smi's generations (``4``) and widths (``16x``)."""
    def speed(gen):
        return sysfs_link_speed(_GEN_GTS.get(int(gen))) if gen and gen.isdigit() else None

    def width(text):
        return text.rstrip('x') if text and text.rstrip('x').isdigit() else None
    return {'kind': 'gpu', 'device': 'GPU %s' % pci, 'pci': pci, 'current_speed': speed(current_gen),
            'max_speed': speed(max_gen), 'current_width': width(current_width), 'max_width': width(max_width)}


def parse_nvidia_smi_text(text):
    """``nvidia-smi -q`` text -> ``(gpus, links, unreadable)``.

    ``gpus`` as ``gpu_health.parse_nvidia_smi_xml`` gives them for the same GPUs (index, pci, uuid, product, ecc_mode,
    ecc_uncorrectable, remapped_rows, retired_pages, clock_reasons); ``links`` the GPUs' PCIe links from ``GPU Link
    Info`` as the sysfs reader's records; ``unreadable`` the (line number, line) pairs that are no nvidia-smi line.
    A ``-d`` selection (``nvidia-smi -q -d ECC``) gives what it shows, the rest null or empty.
    """
    lines = list(enumerate(pasted_text.clean(text).splitlines(), 1))
    trees, unreadable = _tree(lines)
    gpus, links = [], []
    for index, gpu in enumerate(trees):
        pci = gpu_health.pci_address(_text(gpu, 'pci', 'bus id') or gpu['value'])
        gpus.append({
            'index': index,
            'pci': pci,
            'uuid': _text(gpu, 'gpu uuid'),
            'product': _text(gpu, 'product name'),
            'ecc_mode': _text(gpu, 'ecc mode', 'current'),
            'ecc_uncorrectable': {'volatile': _ecc_scope(gpu, 'volatile'), 'aggregate': _ecc_scope(gpu, 'aggregate')},
            'remapped_rows': _remapped_rows(gpu),
            'retired_pages': _retired_pages(gpu),
            'clock_reasons': _clock_reasons(gpu),
        })
        info = _find(gpu, 'pci', 'gpu link info')
        if info is not None:
            links.append(_link(pci, _text(info, 'pcie generation', 'max'), _text(info, 'pcie generation', 'current'),
                               _text(info, 'link width', 'max'), _text(info, 'link width', 'current')))
    return gpus, links, unreadable


def _xml_links(text, gpus):
    root = ET.fromstring(text.strip().encode('utf-8'))
    links = []
    for gpu, element in zip(gpus, root.findall('gpu')):
        info = element.find('pci/pci_gpu_link_info')
        if info is None:
            continue
        links.append(_link(gpu['pci'], *[(info.findtext(path) or '').strip() or None for path in (
            'pcie_gen/max_link_gen', 'pcie_gen/current_link_gen', 'link_widths/max_link_width',
            'link_widths/current_link_width')]))
    return links


def read_nvidia_smi(text):
    """Saved nvidia-smi output in either form -> ``{form: xml|text, gpus, links, unreadable}``.

    XML (``nvidia-smi -q -x``, found by its first character) goes to ``gpu_health.parse_nvidia_smi_xml``; text with
    ``GPU 00000000:3B:00.0`` lines to :func:`parse_nvidia_smi_text`. Raises ValueError naming both forms for anything
    else, so unknown text is never read as a node without GPUs.
    """
    cleaned = pasted_text.clean(text)
    if cleaned.lstrip().startswith('<'):
        try:
            gpus = gpu_health.parse_nvidia_smi_xml(cleaned)
        except ValueError as exc:
            raise ValueError('%s (the forms taken: %s)' % (exc, FORMS)) from exc
        return {'form': 'xml', 'gpus': gpus, 'links': _xml_links(cleaned, gpus), 'unreadable': []}
    if not any(_GPU.match(line.rstrip()) for line in cleaned.splitlines()):
        first = next((line.strip() for line in cleaned.splitlines() if line.strip()), '')
        raise ValueError('neither %s: no XML and no "GPU 00000000:3B:00.0" line (first line: %r)' % (FORMS, first[:80]))
    gpus, links, unreadable = parse_nvidia_smi_text(cleaned)
    return {'form': 'text', 'gpus': gpus, 'links': links, 'unreadable': unreadable}
