# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Read an Arista EOS running configuration back: what the switch holds, vendor-neutral, and how it differs from
the policy rendered for it.

``read_back(switch, rendered, running)`` takes the render of ``switch_qos_render.render('eos', ...)`` and the text of
``show running-config`` (or of some of its sections: ``show running-config interfaces Ethernet1/1`` and the global
``qos map`` lines) and returns ``{state, mismatches}``: the state in the vendor-neutral form of
``switch_qos_readback.py`` (``global``: the switch-wide DSCP map; ``ports``: per port trust, DSCP map, lossless
priorities, ECN and scheduling per traffic class, MTU), and one line per setting that differs from the policy's
intent, ``<switch>: <port or global>: <setting> is <found>, expected <wanted>``, as the Cumulus and SONiC paths word
them (``switch_qos_readback.compare_state``). Settings are compared, not lines: a DSCP map line that lists several
values, thresholds written in kbytes, queue sections in another order all compare equal when they mean the same.

What EOS leaves out of its running configuration is read as EOS's default (Arista EOS User Manual, Quality of
Service chapter): a DSCP with no ``qos map dscp`` line is in its default traffic class (DSCP 0-7 to 1, 8-15 to 0,
then 16-23 to 2 ... 56-63 to 7); a transmit queue without ``no priority`` is strict priority; an interface without
``priority-flow-control on`` pauses no priority. MTU, trust and ECN thresholds are missing when their line is.
Transmit queue N is read as traffic class N (EOS's default traffic class to queue map, which the role keeps).

Only the settings the policy is about are read; the rest of the configuration (and its secrets) never reaches the
result.
"""
from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils import switch_qos_readback as readback

GLOBAL = readback.GLOBAL
# EOS's default DSCP to traffic class map: DSCP 0-7 to TC 1 and 8-15 to TC 0, then eight DSCPs per class
DEFAULT_DSCP_TC = dict((dscp, {0: 1, 1: 0}.get(dscp // 8, dscp // 8)) for dscp in range(64))
# interface name prefixes EOS accepts abbreviated (Et1/1, eth1/1, po10) and prints in full
INTERFACE_TYPES = ('Ethernet', 'Port-Channel', 'Management', 'Loopback', 'Vlan', 'Vxlan', 'Tunnel', 'Recirc-Channel')
ECN_UNITS = {'bytes': 1, 'kbytes': 1000, 'mbytes': 1000 * 1000}

_DSCP_MAP = re.compile(r'^qos map dscp (?P<dscps>[\d\s,-]+?) to traffic-class (?P<tc>\d+)(?:\s.*)?$')
_QUEUE = re.compile(r'^(?P<keyword>uc-tx-queue|tx-queue) (?P<tc>\d+)$')
_PFC_PRIORITY = re.compile(r'^priority-flow-control priority (?P<prio>\d+)(?: (?P<mode>no-drop|drop))?$')
_ECN_THRESHOLD = re.compile(r'(?P<field>minimum-threshold|maximum-threshold) (?P<value>\d+) (?P<unit>\S+)')
_ECN_PROBABILITY = re.compile(r'max-mark-probability (?P<value>\d+)')
_INTERFACE_NAME = re.compile(r'^(?P<type>[A-Za-z][A-Za-z-]*)(?P<rest>\d.*)$')


def parse_config(text):
    """EOS configuration text as a tree: ``[(line, children)]``, children in the same form.

    Nesting follows indentation (EOS indents three spaces a level); comment and separator lines (``!``, ``!!``),
    blank lines and ``end`` are left out.
    """
    root = []
    stack = [(-1, root)]
    for raw in (text or '').splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith('!') or stripped == 'end':
            continue
        indent = len(line) - len(line.lstrip(' '))
        while stack[-1][0] >= indent:
            stack.pop()
        children = []
        stack[-1][1].append((stripped, children))
        stack.append((indent, children))
    return root


def canonical_interface(name):
    """EOS's own spelling of an interface name: ``et1/1`` and ``Eth1/1`` are ``Ethernet1/1``."""
    match = _INTERFACE_NAME.match(name.strip())
    if not match:
        return name.strip()
    prefix = match.group('type').lower()
    found = [full for full in INTERFACE_TYPES if full.lower().startswith(prefix)]
    return (found[0] if len(found) == 1 else match.group('type')) + match.group('rest')


def _dscp_values(text):
    values = []
    for token in re.split(r'[\s,]+', text.strip()):
        if '-' in token:
            low, high = token.split('-', 1)
            values.extend(range(int(low), int(high) + 1))
        elif token:
            values.append(int(token))
    return values


def _ecn(line):
    """The settings of a ``random-detect ecn`` threshold line: ``{field: (value as written, bytes or None)}``."""
    settings = {}
    for match in _ECN_THRESHOLD.finditer(line):
        value, unit = int(match.group('value')), match.group('unit')
        written = '%d %s' % (value, unit)
        settings[match.group('field')] = (written, value * ECN_UNITS[unit] if unit in ECN_UNITS else written)
    probability = _ECN_PROBABILITY.search(line)
    if probability:
        settings['max-mark-probability'] = (probability.group('value'), int(probability.group('value')))
    return settings


def _queue_settings(children):
    queue = {}
    for line, _grandchildren in children:
        if line == 'no priority':
            queue['scheduling'] = 'weighted round-robin'
        elif line == 'priority strict':
            queue['scheduling'] = 'strict priority'
        elif line.startswith('bandwidth percent '):
            queue['bandwidth percent'] = line.split()[-1]
        elif line.startswith('random-detect ecn ') and 'threshold' in line:
            queue['random-detect ecn'] = _ecn(line)
    return queue


def _interface_settings(children):
    port = {'queues': {}, 'pfc priorities': {}}
    for line, grandchildren in children:
        queue = _QUEUE.match(line)
        pfc_priority = _PFC_PRIORITY.match(line)
        if queue:
            key = '%s %d' % (queue.group('keyword'), int(queue.group('tc')))
            port['queues'].setdefault(key, {}).update(_queue_settings(grandchildren))
        elif line.startswith('mtu '):
            port['mtu'] = line.split()[-1]
        elif line.startswith('qos trust '):
            port['qos trust'] = line.split(None, 2)[2]
        elif line in ('priority-flow-control on', 'priority-flow-control mode on'):
            port['priority-flow-control'] = 'on'
        elif line in ('priority-flow-control off', 'no priority-flow-control', 'priority-flow-control mode off'):
            port['priority-flow-control'] = 'off'
        elif pfc_priority:
            port['pfc priorities'][int(pfc_priority.group('prio'))] = pfc_priority.group('mode') or 'drop'
    return port


def settings(text):
    """The QoS settings of an EOS configuration: ``{'dscp': {dscp: tc}, 'interfaces': {name: {...}}}``.

    Only lines that are in the text are in the result (no defaults): ``dscp`` holds the explicit map entries,
    each interface its ``mtu``, ``qos trust``, ``priority-flow-control``, ``pfc priorities`` ({priority: 'no-drop'}),
    and ``queues`` ({'uc-tx-queue 3': {'scheduling', 'bandwidth percent', 'random-detect ecn'}}).
    """
    result = {'dscp': {}, 'interfaces': {}}
    for line, children in parse_config(text):
        dscp_map = _DSCP_MAP.match(line)
        if dscp_map:
            for dscp in _dscp_values(dscp_map.group('dscps')):
                result['dscp'][dscp] = int(dscp_map.group('tc'))
        elif line.startswith('interface '):
            interface = result['interfaces'].setdefault(canonical_interface(line.split(None, 1)[1]),
                                                        {'queues': {}, 'pfc priorities': {}})
            found = _interface_settings(children)
            for queue, queue_settings in found.pop('queues').items():
                interface['queues'].setdefault(queue, {}).update(queue_settings)
            interface['pfc priorities'].update(found.pop('pfc priorities'))
            interface.update(found)
    return result


def queue_keyword(blocks):
    """The transmit queue keyword the rendered blocks use (``uc-tx-queue`` or ``tx-queue``)."""
    for block in blocks or []:
        for parent in (block.get('parents') or [])[1:]:
            match = _QUEUE.match(parent)
            if match:
                return match.group('keyword')
    return 'uc-tx-queue'


def _ecn_state(ecn):
    return {'enabled': True,
            'min_threshold_bytes': ecn['minimum-threshold'][1] if 'minimum-threshold' in ecn else None,
            'max_threshold_bytes': ecn['maximum-threshold'][1] if 'maximum-threshold' in ecn else None,
            'probability_percent': ecn['max-mark-probability'][1] if 'max-mark-probability' in ecn else None}


def _scheduler(queue):
    if queue.get('scheduling') != 'weighted round-robin':
        return 'strict'
    return 'DWRR %s%%' % queue['bandwidth percent'] if 'bandwidth percent' in queue else 'DWRR'


def eos_state(running, ports, keyword='uc-tx-queue', dscps=()):
    """The vendor-neutral state (``switch_qos_readback``) of an EOS configuration text, for ``ports``.

    ``dscp_map`` holds every DSCP the configuration maps explicitly and, with EOS's default for them, ``dscps``
    (those the policy is about); a port the configuration has no section for is left out of ``ports``.
    """
    if not isinstance(running, str):
        raise TypeError('the running configuration must be the text of show running-config, got %s'
                        % type(running).__name__)
    found = settings(running)
    dscp_map = dict((dscp, found['dscp'].get(dscp, DEFAULT_DSCP_TC[dscp]))
                    for dscp in sorted(set(found['dscp']) | set(int(dscp) for dscp in dscps)) if dscp in DEFAULT_DSCP_TC)
    state = {GLOBAL: {'dscp_map': dscp_map}, 'ports': {}}
    for port in ports:
        interface = found['interfaces'].get(canonical_interface(port))
        if interface is None:
            continue
        queues = dict((tc, interface['queues'].get('%s %d' % (keyword, tc), {})) for tc in range(8))
        state['ports'][port] = {
            'trust': interface.get('qos trust'),
            'dscp_map': dict(dscp_map),
            'pfc': (sorted(prio for prio, mode in interface['pfc priorities'].items() if mode == 'no-drop')
                    if interface.get('priority-flow-control') == 'on' else []),
            'ecn': dict((tc, _ecn_state(queue.get('random-detect ecn'))) for tc, queue in queues.items()
                        if 'random-detect ecn' in queue),
            'scheduler': dict((tc, _scheduler(queue)) for tc, queue in queues.items()),
            'mtu': int(interface['mtu']) if str(interface.get('mtu', '')).isdigit() else None,
        }
    return state


def read_back(switch, rendered, running):
    """``{state, mismatches}`` of an EOS switch's configuration text against ``rendered`` (``render('eos', ...)``).

    ``mismatches``: ``['<switch>: <port or global>: <setting> is <found>, expected <wanted>']``, switch-wide first,
    then port by port in the order of the policy's ports; empty when the switch holds the policy.
    """
    if not isinstance(rendered, dict) or not isinstance(rendered.get('intent'), dict) \
            or not isinstance(rendered.get('blocks'), list):
        raise TypeError('rendered must be what roce_switch_config renders for eos (with intent and blocks), got %r'
                        % (type(rendered).__name__,))
    intent = rendered['intent']
    state = eos_state(running, intent['ports'], queue_keyword(rendered['blocks']),
                      [entry['dscp'] for entry in intent['dscp_map']])
    return {'state': state, 'mismatches': readback.compare_state(switch, intent, state)}
