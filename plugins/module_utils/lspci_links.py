# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""PCIe links from saved ``lspci -vv`` text, as the records the health reader builds from sysfs.

The health rules judge ``{kind, device, pci, current_speed, max_speed, current_width, max_width}`` with the texts sysfs
gives (``16.0 GT/s PCIe``, ``16``); lspci prints the same link in its own words (``LnkCap: Port #0, Speed 16GT/s, Width
x16``, ``LnkSta: Speed 2.5GT/s (downgraded), Width x16 (ok)``), so the values are rewritten into the sysfs form and one
rule serves both sources. Only NVIDIA GPUs and network controllers are kept: they are the devices the sysfs reader reads
(a bridge or a root port reports the link from its own side).
"""

from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils import pasted_text
from ansible_collections.hpcfabric.cluster.plugins.module_utils.gpu_health import pci_address

FORM = 'lspci -vv (device lines such as "17:00.0 3D controller: NVIDIA ..." with their LnkCap and LnkSta lines)'

# "0000:17:00.0 3D controller: NVIDIA ..." (-D), "17:00.0 3D controller [0302]: NVIDIA ... [10de:20b0]" (-nn)
_HEADER = re.compile(r'^(?:([0-9A-Fa-f]{4,8}):)?([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])\s+'
                     r'([A-Za-z][^:\[]*?)(?:\s*\[([0-9A-Fa-f]{4})\])?:\s*(.*?)\s*$')
_LNKCAP = re.compile(r'^\s+LnkCap:\s*Port #\d+,\s*Speed\s+([^,\s]+)[^,]*,\s*Width\s+x(\d+)')
_LNKSTA = re.compile(r'^\s+LnkSta:\s*Speed\s+([^,\s]+)[^,]*,\s*Width\s+x(\d+)')
_GTS = re.compile(r'^(\d+(?:\.\d+)?)GT/s$')
# lspci's class names and codes of the devices kept (PCI class codes 03xx display, 02xx network)
_GPU_CLASSES = {'VGA compatible controller': '0300', '3D controller': '0302'}
_NIC_CLASSES = {'Ethernet controller': '0200', 'Infiniband controller': '0207'}
NVIDIA_VENDOR = '10de'


def sysfs_link_speed(gts):
    """``16.0 GT/s PCIe`` - the kernel's current_link_speed text - for a link speed in GT/s; ``Unknown`` for None."""
    return 'Unknown' if gts is None else '%.1f GT/s PCIe' % gts


def _speed(text):
    match = _GTS.match(text)
    return sysfs_link_speed(float(match.group(1)) if match else None)


def _kind(device):
    cls, code, description = device['class'], device['code'], device['description']
    if cls in _GPU_CLASSES or code in _GPU_CLASSES.values():
        # lspci -nn names the vendor by its id as well; plain lspci by its name only
        nvidia = 'NVIDIA' in description or '[%s:' % NVIDIA_VENDOR in description
        return 'gpu' if nvidia else None
    if cls in _NIC_CLASSES or code in _NIC_CLASSES.values():
        return 'nic'
    return None


def parse_lspci(text):
    """``lspci -vv`` text -> ``([{pci, class, code, description, link, denied}], [(line number, unreadable line)])``.

    ``link`` is ``{current_speed, max_speed, current_width, max_width}`` in sysfs's words, or null when the device shows
    no LnkCap/LnkSta (no PCI Express capability, or ``denied``: lspci without root prints ``Capabilities: <access
    denied>``). Indented lines belong to the device above them; any other line that is not a device line is unreadable.
    """
    devices, unreadable = [], []
    device = None
    for number, line in enumerate(pasted_text.clean(text).splitlines(), 1):
        if not line.strip():
            continue
        match = _HEADER.match(line)
        if match:
            domain, bus, slot, function, cls, code, description = match.groups()
            device = {'pci': pci_address('%s:%s:%s.%s' % (domain or '0000', bus, slot, function)), 'class': cls,
                      'code': code, 'description': description, 'link': None, 'denied': False}
            devices.append(device)
            continue
        if device is None or not line[0].isspace():
            unreadable.append((number, line))
            continue
        if '<access denied>' in line:
            device['denied'] = True
        for pattern, speed_key, width_key in ((_LNKCAP, 'max_speed', 'max_width'),
                                              (_LNKSTA, 'current_speed', 'current_width')):
            found = pattern.match(line)
            if found:
                device['link'] = device['link'] or dict.fromkeys(
                    ('current_speed', 'max_speed', 'current_width', 'max_width'))
                device['link'][speed_key], device['link'][width_key] = _speed(found.group(1)), found.group(2)
    return devices, unreadable


def _name(description):
    """The description without lspci -nn's ids and the revision: what an operator looks for on the card."""
    return re.sub(r'\s*\((?:rev|prog-if) [^)]*\)|\s*\[[0-9a-f]{4}:[0-9a-f]{4}\]', '', description).strip()


def read_lspci(text):
    """Saved ``lspci -vv`` text -> ``{links, unread, unreadable}`` for the health reader.

    ``links``: ``{kind: gpu|nic, device, pci, current_speed, max_speed, current_width, max_width}`` per NVIDIA GPU
    (``device`` ``GPU 0000:17:00.0``, as the sysfs reader names it) and per Ethernet or InfiniBand controller
    (``NIC 0000:01:00.0 (Mellanox ... [ConnectX-5])``: lspci does not know its netdev). ``unread``: ``{source, why}``
    per such device whose link the text does not show - its link is unknown, not good. ``unreadable``: the (line
    number, line) pairs that are no lspci line. Raises ValueError when the text holds no device line.
    """
    devices, unreadable = parse_lspci(text)
    if not devices:
        raise ValueError('not %s: no device line' % FORM)
    links, unread = [], []
    for device in devices:
        kind = _kind(device)
        if kind is None:
            continue
        name = 'GPU %s' % device['pci'] if kind == 'gpu' else 'NIC %s (%s)' % (device['pci'],
                                                                               _name(device['description']))
        if device['link'] is None:
            why = ('lspci ran without root: it prints "Capabilities: <access denied>" instead of the link'
                   if device['denied'] else 'no LnkCap/LnkSta lines for it in the text')
            unread.append({'source': 'PCIe link of %s' % name, 'why': why})
            continue
        links.append(dict(device['link'], kind=kind, device=name, pci=device['pci']))
    return {'links': links, 'unread': unread, 'unreadable': unreadable}
