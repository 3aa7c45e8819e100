# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Saved port counter text - ``perfquery``, ``perfquery -x``, ``rdma statistic show`` - read into the counters the
``port_counters`` module reads from sysfs, named as it names them.

``perfquery`` asks the port's PMA for the same PortCounters and PortCountersExtended that the kernel shows under
``/sys/class/infiniband/DEV/ports/N/counters/`` (the data counters in 4-octet words in both), so each field becomes
``counters/<sysfs name>`` by the table below. ``rdma statistic show`` prints the driver's ``hw_counters/`` under their
own names (``link mlx5_0/1 out_of_buffer 0 ...``). A text may hold several forms (a support bundle's file of both): each
parser reads its own lines, and a line is unreadable only when no parser could read it.
"""

from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils import pasted_text

FORMS = 'perfquery, perfquery -x or rdma statistic show'

# perfquery's field names (infiniband-diags' perfquery.c, PortCounters and PortCountersExtended) -> the kernel's file
# names under counters/ (Documentation/ABI/stable/sysfs-class-infiniband). PortSelect, CounterSelect(2) are the query,
# QP1Dropped has no sysfs file: they are read and left out.
PERFQUERY_COUNTERS = {
    'SymbolErrorCounter': 'symbol_error',
    'LinkErrorRecoveryCounter': 'link_error_recovery',
    'LinkDownedCounter': 'link_downed',
    'PortRcvErrors': 'port_rcv_errors',
    'PortRcvRemotePhysicalErrors': 'port_rcv_remote_physical_errors',
    'PortRcvSwitchRelayErrors': 'port_rcv_switch_relay_errors',
    'PortXmitDiscards': 'port_xmit_discards',
    'PortXmitConstraintErrors': 'port_xmit_constraint_errors',
    'PortRcvConstraintErrors': 'port_rcv_constraint_errors',
    'LocalLinkIntegrityErrors': 'local_link_integrity_errors',
    'ExcessiveBufferOverrunErrors': 'excessive_buffer_overrun_errors',
    'VL15Dropped': 'VL15_dropped',
    'PortXmitWait': 'port_xmit_wait',
    'PortXmitData': 'port_xmit_data',
    'PortRcvData': 'port_rcv_data',
    'PortXmitPkts': 'port_xmit_packets',
    'PortRcvPkts': 'port_rcv_packets',
    'PortUnicastXmitPkts': 'unicast_xmit_packets',
    'PortUnicastRcvPkts': 'unicast_rcv_packets',
    'PortMulticastXmitPkts': 'multicast_xmit_packets',
    'PortMulticastRcvPkts': 'multicast_rcv_packets',
}
PERFQUERY_GROUP = 'counters'
RDMA_GROUP = 'hw_counters'

# "# Port counters: Lid 7 port 1 (CapMask: 0x1400)", "# Port extended counters: Lid 1719 port 2 (...)"; other
# attributes (-E: "# PortRcvErrorDetails counters: ...") are read as blocks whose fields have no sysfs file
_PQ_HEADER = re.compile(r'^#\s*(\w+(?: extended)?) counters: Lid (\d+) (?:port (\d+)|all ports)')
_PQ_FIELD = re.compile(r'^(\w+):\.+\s*(\S+)\s*$')
_RDMA_LINK = re.compile(r'^link\s+(\S+)/(\d+)(?:\s+(.*?))?\s*$')
_RDMA_NAME = re.compile(r'^[A-Za-z_]\w*$')


def parse_perfquery(text):
    """perfquery text -> ``([{lid, port, extended, counters: {counters/name: value}}], [(line number, line)])``.

    One block per header; fields before any header (a paste that left it out) form a block of their own whose port is
    its ``PortSelect``.
    """
    blocks, unreadable = [], []
    block = None
    for number, line in enumerate(pasted_text.clean(text).splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        header = _PQ_HEADER.match(stripped)
        if header:
            block = {'lid': int(header.group(2)), 'port': int(header.group(3)) if header.group(3) else None,
                     'extended': header.group(1) == 'Port extended', 'counters': {}}
            blocks.append(block)
            continue
        field = _PQ_FIELD.match(stripped)
        if not field:
            unreadable.append((number, line))
            continue
        name, value = field.groups()
        if block is None:
            block = {'lid': None, 'port': None, 'extended': False, 'counters': {}}
            blocks.append(block)
        if name == 'PortSelect' and block['port'] is None and value.isdigit():
            block['port'] = int(value)
        if name in PERFQUERY_COUNTERS and value.isdigit():
            block['counters']['%s/%s' % (PERFQUERY_GROUP, PERFQUERY_COUNTERS[name])] = int(value)
        elif name in PERFQUERY_COUNTERS:
            unreadable.append((number, line))
    return blocks, unreadable


def parse_rdma_statistic(text):
    """``rdma statistic show`` text -> ``({DEV:PORT: {hw_counters/name: value}}, [(line number, line)])``.

    A link's ``name value`` pairs may go on over the lines that follow it: ``-p`` prints one pair a line, and a mail or
    a narrow terminal wraps the one-line form anywhere, even between a name and its value. A blank line or the next
    ``link`` line ends it.
    """
    links, unreadable = {}, []
    tokens = None
    entries = []

    for number, line in enumerate(pasted_text.clean(text).splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            tokens = None
            continue
        link = _RDMA_LINK.match(stripped)
        if link:
            tokens = []
            entries.append(('%s:%s' % (link.group(1), link.group(2)), tokens))
            words = (link.group(3) or '').split()
        elif tokens is None:
            unreadable.append((number, line))
            continue
        else:
            words = stripped.split()
        tokens.extend((word, number, line) for word in words)
    for port, words in entries:
        counters = links.setdefault(port, {})
        index = 0
        while index < len(words):
            name, number, line = words[index]
            value = words[index + 1][0] if index + 1 < len(words) else None
            if _RDMA_NAME.match(name) and value is not None and value.isdigit():
                counters['%s/%s' % (RDMA_GROUP, name)] = int(value)
                index += 2
                continue
            # a line that breaks the pairs is unreadable; the pairs start again on the next line
            if (number, line) not in unreadable:
                unreadable.append((number, line))
            while index < len(words) and words[index][1] == number:
                index += 1
    return links, sorted(unreadable)


def read_port_counters(text):
    """Saved port counter text in any of the forms -> ``{perfquery: [block], rdma: {DEV:PORT: counters}, unreadable}``.

    Raises ValueError naming the forms when none of them is in the text.
    """
    blocks, perfquery_unreadable = parse_perfquery(text)
    links, rdma_unreadable = parse_rdma_statistic(text)
    blocks = [block for block in blocks if block['counters']]
    if not blocks and not links:
        first = next((line.strip() for line in pasted_text.clean(text).splitlines() if line.strip()), '')
        raise ValueError('neither %s: no "Name:....value" counter line and no "link DEV/PORT" line (first line: %r)'
                         % (FORMS, first[:80]))
    if blocks and links:
        unreadable = sorted(set(perfquery_unreadable) & set(rdma_unreadable))
    else:
        unreadable = perfquery_unreadable if blocks else rdma_unreadable
    return {'perfquery': blocks, 'rdma': links, 'unreadable': unreadable}


def port_counters(read, rdma_port):
    """The counters of one RDMA port (``mlx5_0:1``; None when the node's sysfs does not say) from a
    :func:`read_port_counters` result: ``({group/name: value}, rdma_port)``.

    perfquery names a port by its number only and ``rdma statistic show`` lists every port of the node, so a text of
    several ports is narrowed to ``rdma_port``; with ``rdma_port`` unknown the text must hold one port, which then
    names it (``rdma statistic`` gives its device, perfquery does not). Extended counters win over the basic ones of
    the same port (64 bits against 32). Raises ValueError when the text holds no such port, or several and none is it.
    """
    number = int(rdma_port.rpartition(':')[2]) if rdma_port else None
    counters = {}
    ports = set(block['port'] for block in read['perfquery'])
    if ports:
        # one port in the text is taken when the node's port is unknown, or the text does not say which it is
        if number not in ports and not (len(ports) == 1 and (number is None or None in ports)):
            raise ValueError('the perfquery text is of port %s, not of %s' % (
                ', '.join(sorted(str(port) for port in ports)), rdma_port or 'one port'))
        chosen = number if number in ports else next(iter(ports))
        for block in sorted(read['perfquery'], key=lambda block: block['extended']):
            if block['port'] == chosen:
                counters.update(block['counters'])
    if read['rdma']:
        if rdma_port is None and len(read['rdma']) == 1:
            rdma_port = next(iter(read['rdma']))
        if rdma_port not in read['rdma']:
            raise ValueError('the rdma statistic text has links %s, not %s' % (
                ', '.join(sorted(port.replace(':', '/') for port in read['rdma'])),
                rdma_port.replace(':', '/') if rdma_port else 'one link'))
        counters.update(read['rdma'][rdma_port])
    return counters, rdma_port
