# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Read a switch's RoCE QoS back and compare it with the policy rendered for it.

Every vendor path reduces what the switch holds to one vendor-neutral *state* and compares it with the render's
``intent`` (``switch_qos_render.intent``) in ``compare_state``; every difference is one line

    <switch>: <port or global>: <setting> is <found>, expected <wanted>

(``mismatch_line``), e.g. ``leaf02: Ethernet8: PFC priorities is none, expected 3``. The state is

    {'global': {SETTING: value, ...}, 'ports': {PORT: {SETTING: value, ...}, ...}}

with the settings below; a vendor leaves out what it does not hold at that level (SONiC has no switch-wide PFC).
``global`` holds the switch-wide objects the role writes (NVUE's default-global profiles, SONiC's AZURE maps);
``ports`` what each port actually uses (through its own profile or map binding), so a port bound elsewhere is named,
and a port that only inherits a global difference is not named again.

- ``trust``: ``dscp`` (what the policy asks), ``pcp`` or the vendor's word; None when unset
- ``dscp_map``: ``{dscp: traffic class}`` (priority N is traffic class N in this collection)
- ``pfc``: sorted lossless priorities (``[]``: PFC off), None when unreadable
- ``ecn``: ``{traffic class: {enabled: True | False | vendor word, min_threshold_bytes, max_threshold_bytes,
  probability_percent}}``
- ``scheduler``: ``{traffic class: 'strict' | 'DWRR 50%'}``
- ``mtu``: int, None when unset

The same state feeds the cluster-wide check of hosts against switches (``fabric_qos.py``). Settings the neutral
form does not cover (SONiC's TC to queue and priority group maps, NVUE's RoCE mode and PFC tx/rx) are compared leaf
by leaf with the rendered tree and named by their vendor path (``leftover_lines``).
"""
from __future__ import annotations

import re

GLOBAL = 'global'
SETTINGS = ('trust', 'dscp_map', 'pfc', 'ecn', 'scheduler', 'mtu')
ECN_THRESHOLDS = (('min_threshold_bytes', 'ECN minimum threshold (bytes)'),
                  ('max_threshold_bytes', 'ECN maximum threshold (bytes)'),
                  ('probability_percent', 'ECN marking probability (%)'))


def show(value):
    """A value as a mismatch line prints it: None is ``missing``, booleans ``on``/``off``, lists ``3,4`` or ``none``."""
    if value is None:
        return 'missing'
    if isinstance(value, bool):
        return 'on' if value else 'off'
    if isinstance(value, (list, tuple)):
        return ','.join(str(item) for item in value) if value else 'none'
    return str(value)


def mismatch_line(switch, scope, setting, found, expected):
    """``<switch>: <port or global>: <setting> is <found>, expected <wanted>``."""
    return '%s: %s: %s is %s, expected %s' % (switch, scope, setting, show(found), show(expected))


def expected_settings(intent):
    """The neutral state every port (and the switch-wide objects) must hold, from ``switch_qos_render.intent``."""
    ecn = intent['ecn']
    scheduler = dict((tc, 'strict') for tc in intent['strict_classes'])
    scheduler.update((ets['traffic_class'], 'DWRR %d%%' % ets['percent']) for ets in intent['ets'])
    return {
        'trust': intent['trust'],
        'dscp_map': dict((entry['dscp'], entry['priority']) for entry in intent['dscp_map']),
        'pfc': sorted(intent['pfc_priorities']),
        'ecn': {ecn['traffic_class']: {'enabled': True,
                                       'min_threshold_bytes': ecn['min_threshold_bytes'],
                                       'max_threshold_bytes': ecn['max_threshold_bytes'],
                                       'probability_percent': ecn['probability_percent']}},
        'scheduler': scheduler,
        'mtu': intent['mtu'],
    }


def setting_differences(name, found, expected):
    """``[(setting, found, wanted)]`` for one neutral setting."""
    if name == 'dscp_map':
        found = found or {}
        return [('DSCP %d traffic class' % dscp, found.get(dscp), want)
                for dscp, want in sorted(expected.items()) if found.get(dscp) != want]
    if name == 'pfc':
        have = None if found is None else sorted(set(found))
        return [] if have == expected else [('PFC priorities', have, expected)]
    if name == 'ecn':
        out = []
        for tc, want in sorted(expected.items()):
            have = (found or {}).get(tc) or {'enabled': False}
            if have.get('enabled') is not True:
                out.append(('ECN on traffic class %d' % tc, have.get('enabled'), True))
                continue
            out.extend(('%s on traffic class %d' % (label, tc), have.get(key), want[key])
                       for key, label in ECN_THRESHOLDS if have.get(key) != want[key])
        return out
    if name == 'scheduler':
        found = found or {}
        return [('traffic class %d scheduling' % tc, found.get(tc), want)
                for tc, want in sorted(expected.items()) if found.get(tc) != want]
    label = 'MTU' if name == 'mtu' else name
    return [] if found == expected else [(label, found, expected)]


def compare_state(switch, intent, state):
    """Mismatch lines of a neutral ``state`` against the ``intent``: switch-wide first, then port by port.

    A port line that repeats a switch-wide one (the port merely uses the global object) is left out; a port the
    state does not have at all is named once.
    """
    expected = expected_settings(intent)
    lines = []
    seen = set()
    held = state.get(GLOBAL) or {}
    for name in SETTINGS:
        if name in held:
            for setting, found, want in setting_differences(name, held[name], expected[name]):
                seen.add((setting, show(found), show(want)))
                lines.append(mismatch_line(switch, GLOBAL, setting, found, want))
    ports = state.get('ports') or {}
    for port in intent['ports']:
        if port not in ports:
            lines.append(mismatch_line(switch, port, 'port', None, 'present'))
            continue
        for name in SETTINGS:
            if name not in ports[port]:
                continue
            for setting, found, want in setting_differences(name, ports[port][name], expected[name]):
                if (setting, show(found), show(want)) not in seen:
                    lines.append(mismatch_line(switch, port, setting, found, want))
    return lines


def leftover_lines(switch, changes, covered, describe):
    """Lines for rendered leaves the neutral state does not cover (``changes`` from ``tree_changes``).

    ``covered``: regular expressions of the paths ``compare_state`` already judges; ``describe(path)`` gives the
    (scope, setting) a path is named by.
    """
    lines = []
    for change in changes:
        if any(re.search(pattern, change['path']) for pattern in covered):
            continue
        scope, setting = describe(change['path'])
        lines.append(mismatch_line(switch, scope, setting, change['current'], change['desired']))
    return lines


def _dict(value):
    return value if isinstance(value, dict) else {}


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None if value is None else value


def _numbered(mapping):
    """``{'26': x}`` → ``{26: x}``, skipping keys that are not numbers."""
    return dict((int(key), value) for key, value in _dict(mapping).items() if str(key).isdigit())


# --- NVIDIA Cumulus Linux: the applied NVUE tree -------------------------------------------------------------------

NVUE_KINDS = ('mapping', 'pfc', 'congestion-control', 'egress-scheduler')
NVUE_TRUST = {'l3': 'dscp', 'l2': 'pcp', 'both': 'pcp and dscp'}
NVUE_COVERED = (r'^/qos/(mapping|pfc|congestion-control|egress-scheduler)/[^/]+/(trust|dscp|switch-priority|traffic-class)(/|$)',
                r'^/interface/[^/]+/link/mtu$')


def nvue_state(tree, ports, profile):
    """Neutral state of an NVUE tree (``GET /nvue_v1/qos`` and ``/interface`` of ``?rev=applied``).

    ``profile`` is the profile the role writes (default-global); a port with ``qos <kind> profile OTHER`` uses that
    one instead.
    """
    tree = _dict(tree)
    qos = _dict(tree.get('qos'))
    interfaces = _dict(tree.get('interface'))
    state = {GLOBAL: _nvue_settings(qos, dict.fromkeys(NVUE_KINDS, profile)), 'ports': {}}
    for port in ports:
        if port not in interfaces:
            continue
        interface = _dict(interfaces[port])
        port_qos = _dict(interface.get('qos'))
        names = dict((kind, _dict(port_qos.get(kind)).get('profile', profile)) for kind in NVUE_KINDS)
        settings = _nvue_settings(qos, names)
        settings['mtu'] = _int(_dict(interface.get('link')).get('mtu'))
        state['ports'][port] = settings
    return state


def _nvue_settings(qos, names):
    def profile(kind):
        return _dict(qos.get(kind)).get(names[kind])

    mapping = _dict(profile('mapping'))
    pfc = profile('pfc')
    congestion = _numbered(_dict(profile('congestion-control')).get('traffic-class'))
    scheduler = _numbered(_dict(profile('egress-scheduler')).get('traffic-class'))
    trust = mapping.get('trust')
    return {
        'trust': NVUE_TRUST.get(trust, trust),
        'dscp_map': dict((dscp, _int(_dict(entry).get('switch-priority')))
                         for dscp, entry in _numbered(mapping.get('dscp')).items()),
        # a PFC profile that does not exist pauses nothing
        'pfc': sorted(_numbered(_dict(pfc).get('switch-priority'))),
        'ecn': dict((tc, {'enabled': _nvue_ecn_enabled(_dict(entry).get('ecn')),
                          'min_threshold_bytes': _int(_dict(entry).get('min-threshold')),
                          'max_threshold_bytes': _int(_dict(entry).get('max-threshold')),
                          'probability_percent': _int(_dict(entry).get('probability'))})
                    for tc, entry in congestion.items()),
        'scheduler': dict((tc, _nvue_scheduler(_dict(entry))) for tc, entry in scheduler.items()),
    }


def _nvue_ecn_enabled(value):
    return True if value == 'enable' else (False if value in (None, 'disable') else value)


def _nvue_scheduler(entry):
    mode = entry.get('mode')
    if mode == 'dwrr':
        return 'DWRR %s%%' % entry.get('bw-percent')
    return mode


def describe_nvue_path(path):
    """(scope, setting) of an NVUE path: ``/interface/swp1/link/mtu`` → (swp1, link mtu), ``/qos/roce/mode`` → (global, qos roce mode)."""
    parts = path.strip('/').split('/')
    if parts[0] == 'interface' and len(parts) > 2:
        return parts[1], ' '.join(parts[2:])
    return GLOBAL, ' '.join(parts)


# --- SONiC: CONFIG_DB --------------------------------------------------------------------------------------------

SONIC_COVERED = (r'^/DSCP_TO_TC_MAP/', r'^/PORT_QOS_MAP/[^/]+/(dscp_to_tc_map|pfc_enable)$', r'^/PORT/[^/]+/mtu$',
                 r'^/QUEUE/', r'^/SCHEDULER/',
                 r'^/WRED_PROFILE/[^/]+/(ecn|green_min_threshold|green_max_threshold|green_drop_probability)$')


def sonic_state(config_db, ports, names):
    """Neutral state of CONFIG_DB (``show runningconfiguration all``).

    ``names``: the objects the role writes, ``{'dscp_map': 'AZURE', 'wred_profile': 'ROCE_LOSSLESS',
    'ecn_class': 3, 'schedulers': {traffic class: scheduler name}}``; each port is read through its own
    PORT_QOS_MAP binding and QUEUE entries.
    """
    db = _dict(config_db)
    dscp_maps = _dict(db.get('DSCP_TO_TC_MAP'))
    wred = _dict(db.get('WRED_PROFILE'))
    schedulers = _dict(db.get('SCHEDULER'))
    port_qos = _dict(db.get('PORT_QOS_MAP'))
    port_table = _dict(db.get('PORT'))
    queues = _sonic_queues(_dict(db.get('QUEUE')))
    state = {GLOBAL: {
        'dscp_map': _sonic_map(dscp_maps.get(names['dscp_map'])),
        'ecn': {names['ecn_class']: _sonic_wred(wred.get(names['wred_profile']))},
        'scheduler': dict((tc, _sonic_scheduler(schedulers.get(name))) for tc, name in names['schedulers'].items()),
    }, 'ports': {}}
    for port in ports:
        if port not in port_table:
            continue
        binding = port_qos.get(port)
        port_queues = queues.get(port, {})
        state['ports'][port] = {
            'dscp_map': _sonic_map(dscp_maps.get(_dict(binding).get('dscp_to_tc_map'))),
            'pfc': None if binding is None else _sonic_pfc(_dict(binding).get('pfc_enable')),
            'ecn': dict((tc, _sonic_wred(wred.get(queue.get('wred_profile')))) for tc, queue in port_queues.items()),
            'scheduler': dict((tc, _sonic_scheduler(schedulers.get(queue.get('scheduler'))))
                              for tc, queue in port_queues.items()),
            'mtu': _int(_dict(port_table[port]).get('mtu')),
        }
    return state


def _sonic_queues(table):
    """``{'Ethernet0|3': {...}, 'Ethernet0|0-2': {...}}`` → ``{'Ethernet0': {3: {...}, 0: {...}, 1: ..., 2: ...}}``."""
    out = {}
    for key, queue in table.items():
        port, _sep, which = str(key).rpartition('|')
        if not port:
            continue
        for part in which.split(','):
            low, _dash, high = part.partition('-')
            if low.isdigit() and (high or low).isdigit():
                for tc in range(int(low), int(high or low) + 1):
                    out.setdefault(port, {})[tc] = _dict(queue)
    return out


def _sonic_map(mapping):
    return dict((key, _int(value)) for key, value in _numbered(mapping).items())


def _sonic_pfc(value):
    return sorted(int(prio) for prio in str(value or '').split(',') if prio.strip().isdigit())


def _sonic_wred(profile):
    if not isinstance(profile, dict):
        return {'enabled': False}
    ecn = profile.get('ecn')
    return {'enabled': True if ecn == 'ecn_all' else (False if ecn in (None, 'ecn_none') else ecn),
            'min_threshold_bytes': _int(profile.get('green_min_threshold')),
            'max_threshold_bytes': _int(profile.get('green_max_threshold')),
            'probability_percent': _int(profile.get('green_drop_probability'))}


def _sonic_scheduler(entry):
    if not isinstance(entry, dict):
        return None
    kind = str(entry.get('type', '')).upper()
    if kind == 'STRICT':
        return 'strict'
    return '%s %s%%' % (kind, entry.get('weight'))


def describe_sonic_path(path):
    """(scope, setting) of a CONFIG_DB path: ``/PORT_QOS_MAP/Ethernet0/tc_to_pg_map`` → (Ethernet0, tc_to_pg_map),
    ``/TC_TO_QUEUE_MAP/AZURE/3`` → (global, TC_TO_QUEUE_MAP|AZURE 3)."""
    parts = path.strip('/').split('/')
    if parts[0] in ('PORT_QOS_MAP', 'PORT') and len(parts) > 2:
        return parts[1], ' '.join(parts[2:])
    return GLOBAL, '|'.join(parts[:2]) + ''.join(' ' + part for part in parts[2:])
