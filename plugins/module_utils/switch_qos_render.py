# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Render the lossless RoCE policy for leaf/spine switches: NVIDIA Cumulus (NVUE), SONiC, Arista EOS.

Every renderer is a pure function of the policy (``roce_policy.resolve_policy``) and the port list,
so golden-file tests need no switch. ``render()`` returns the reviewable text plus the structured
form each apply path needs (NVUE REST body, CONFIG_DB fragment, eos_config blocks) and, when the
switch's running configuration is given, the differences, (SONiC) the JSON patch and the read-back:
the switch's state in vendor-neutral form and the settings that differ from the policy, one line each
(``switch_qos_readback.py``).
"""
from __future__ import annotations

import json
import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import (
    PolicyError,
    dscp_to_priority,
    ets_classes,
    resolve_policy,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils import switch_qos_readback as readback

PLATFORMS = ('cumulus', 'sonic', 'eos')
EOS_QUEUE_KEYWORDS = ('uc-tx-queue', 'tx-queue')
PORTS_VARIABLE = 'switch_qos_ports'
_PORT_NAME = re.compile(r'^[A-Za-z][A-Za-z0-9/._:-]*$')

# SONiC: keep the image's map names so PORT_QOS_MAP bindings made by `config qos reload` stay valid;
# the WRED profile and schedulers get names of their own so the default ones are left untouched.
SONIC_MAP = 'AZURE'
SONIC_WRED_PROFILE = 'ROCE_LOSSLESS'
SONIC_STRICT_SCHEDULER = 'ROCE_STRICT'
NVUE_PROFILE = 'default-global'


def render(platform, policy=None, ports=None, running=None, eos_queue='uc-tx-queue', switch='switch'):
    """Render ``policy`` (overrides of the default policy) for one switch.

    Returns ``{platform, format, extension, text, intent, ...}``; with ``running`` (the switch's
    current configuration as parsed JSON: NVUE tree or CONFIG_DB) also ``changes``, ``patch``,
    ``state`` (what the switch holds, vendor-neutral) and ``mismatches`` (lines naming ``switch``,
    the port or ``global`` and the setting).
    """
    if platform not in PLATFORMS:
        raise PolicyError(['switch_qos_platform: %r is not one of %s' % (platform, ', '.join(PLATFORMS))])
    resolved = resolve_policy(policy)
    ports = check_ports(ports)
    if platform == 'cumulus':
        result = render_cumulus(resolved, ports)
    elif platform == 'sonic':
        result = render_sonic(resolved, ports)
    else:
        if eos_queue not in EOS_QUEUE_KEYWORDS:
            raise PolicyError(['switch_qos_eos_queue_keyword: %r is not one of %s' % (eos_queue, ', '.join(EOS_QUEUE_KEYWORDS))])
        result = render_eos(resolved, ports, eos_queue)
    result['intent'] = intent(resolved, ports)
    if running is not None:
        if platform == 'eos':
            raise PolicyError(['running: not used for eos (arista.eos.eos_config compares with the running config itself)'])
        desired = result['body'] if platform == 'cumulus' else result['config_db']
        result['changes'] = tree_changes(desired, running)
        result['patch'] = sonic_patch(desired, running) if platform == 'sonic' else (desired if result['changes'] else {})
        result.update(read_back(platform, resolved, ports, running, result['intent'], result['changes'], switch))
    return result


def read_back(platform, policy, ports, running, intent, changes, switch):
    """``{state, mismatches}`` of a Cumulus or SONiC switch's configuration against what this module renders."""
    if platform == 'cumulus':
        state = readback.nvue_state(running, ports, NVUE_PROFILE)
        covered, describe = readback.NVUE_COVERED, readback.describe_nvue_path
    else:
        state = readback.sonic_state(running, ports, {
            'dscp_map': SONIC_MAP,
            'wred_profile': SONIC_WRED_PROFILE,
            'ecn_class': policy['roce']['priority'],
            'schedulers': dict((tc, _sonic_scheduler_name(policy, tc)) for tc in _queue_classes(policy)),
        })
        covered, describe = readback.SONIC_COVERED, readback.describe_sonic_path
    mismatches = readback.compare_state(switch, intent, state) + readback.leftover_lines(switch, changes, covered, describe)
    return {'state': state, 'mismatches': mismatches}


def check_ports(ports):
    """Validate the switch port list; return it as a list of strings."""
    if not isinstance(ports, (list, tuple)) or not ports:
        raise PolicyError(['%s: must be a non-empty list of port names, got %r' % (PORTS_VARIABLE, ports)])
    errors = ['%s: %r is not a port name' % (PORTS_VARIABLE, port) for port in ports
              if not isinstance(port, str) or not _PORT_NAME.fullmatch(port)]
    duplicates = sorted(set(port for port in ports if list(ports).count(port) > 1), key=str)
    if duplicates:
        errors.append('%s: %s listed more than once' % (PORTS_VARIABLE, ', '.join(map(str, duplicates))))
    if errors:
        raise PolicyError(errors)
    return list(ports)


def intent(policy, ports):
    """Vendor-neutral summary of what every switch render must implement (used to cross-check)."""
    return {
        'trust': policy['trust'],
        'dscp_map': [{'dscp': dscp, 'priority': prio} for dscp, prio in dscp_to_priority(policy)],
        'pfc_priorities': sorted(policy['pfc']['priorities']),
        'ecn': {'traffic_class': policy['roce']['priority'],
                'min_threshold_bytes': policy['ecn']['min_threshold_bytes'],
                'max_threshold_bytes': policy['ecn']['max_threshold_bytes'],
                'probability_percent': policy['ecn']['probability_percent']},
        'ets': [{'traffic_class': tc, 'percent': share} for tc, share in ets_classes(policy)],
        'strict_classes': sorted(policy['ets']['strict_classes']),
        'mtu': policy['mtu']['switch'],
        'ports': list(ports),
    }


def _queue_classes(policy):
    """Traffic classes the policy schedules: ETS classes and strict ones, in class order."""
    return sorted(set([tc for tc, _share in ets_classes(policy)] + policy['ets']['strict_classes']))


# --- NVIDIA Cumulus Linux (NVUE) ----------------------------------------------------------------

def render_cumulus(policy, ports):
    """NVUE configuration tree (the REST API PATCH body) and the equivalent `nv set` commands."""
    qos = {
        'roce': {'enable': 'on', 'mode': 'lossless'},
        'mapping': {NVUE_PROFILE: {
            'trust': 'l3',
            'dscp': dict((str(dscp), {'switch-priority': prio}) for dscp, prio in dscp_to_priority(policy)),
        }},
        'pfc': {NVUE_PROFILE: {
            'switch-priority': dict((str(prio), {}) for prio in sorted(policy['pfc']['priorities'])),
            'tx': 'enable',
            'rx': 'enable',
        }},
        'egress-queue-mapping': {NVUE_PROFILE: {
            'switch-priority': dict((str(prio), {'traffic-class': prio}) for _dscp, prio in dscp_to_priority(policy)),
        }},
        'congestion-control': {NVUE_PROFILE: {'traffic-class': {str(policy['roce']['priority']): {
            'ecn': 'enable',
            'min-threshold': policy['ecn']['min_threshold_bytes'],
            'max-threshold': policy['ecn']['max_threshold_bytes'],
            'probability': policy['ecn']['probability_percent'],
        }}}},
        'egress-scheduler': {NVUE_PROFILE: {'traffic-class': _nvue_scheduler(policy)}},
    }
    body = {'qos': qos, 'interface': dict((port, {'link': {'mtu': policy['mtu']['switch']}}) for port in ports)}
    commands = nvue_commands(body)
    return {
        'platform': 'cumulus',
        'format': 'nvue-commands',
        'extension': 'nv',
        'body': body,
        'commands': commands,
        'text': '\n'.join(commands + ['nv config apply']) + '\n',
    }


def _nvue_scheduler(policy):
    shares = policy['ets']['bandwidth_percent']
    classes = {}
    for tc in _queue_classes(policy):
        if tc in policy['ets']['strict_classes']:
            classes[str(tc)] = {'mode': 'strict'}
        else:
            classes[str(tc)] = {'mode': 'dwrr', 'bw-percent': shares[tc]}
    return classes


def nvue_commands(tree, prefix='nv set'):
    """Flatten an NVUE tree into `nv set` lines: a leaf value ends the line, an empty dict is a set key."""
    lines = []
    for key, value in tree.items():
        path = '%s %s' % (prefix, key)
        if isinstance(value, dict) and value:
            lines.extend(nvue_commands(value, path))
        elif isinstance(value, dict):
            lines.append(path)
        else:
            lines.append('%s %s' % (path, value))
    return lines


# --- SONiC (CONFIG_DB) ---------------------------------------------------------------------------

def render_sonic(policy, ports):
    """CONFIG_DB fragment: maps, WRED/ECN profile, schedulers, per-port QoS binding, queues and MTU."""
    pfc = sorted(policy['pfc']['priorities'])
    shares = policy['ets']['bandwidth_percent']
    identity = dict((str(tc), str(tc)) for tc in range(8))
    config = {
        'DSCP_TO_TC_MAP': {SONIC_MAP: dict((str(dscp), str(prio)) for dscp, prio in dscp_to_priority(policy))},
        'TC_TO_PRIORITY_GROUP_MAP': {SONIC_MAP: dict((str(tc), str(tc) if tc in pfc else '0') for tc in range(8))},
        'TC_TO_QUEUE_MAP': {SONIC_MAP: identity},
        'PFC_PRIORITY_TO_QUEUE_MAP': {SONIC_MAP: dict(identity)},
        'WRED_PROFILE': {SONIC_WRED_PROFILE: _sonic_wred(policy)},
        'SCHEDULER': {},
        'PORT_QOS_MAP': {},
        'QUEUE': {},
        'PORT': {},
    }
    for tc in _queue_classes(policy):
        name = _sonic_scheduler_name(policy, tc)
        config['SCHEDULER'][name] = {'type': 'STRICT'} if tc in policy['ets']['strict_classes'] else {'type': 'DWRR', 'weight': str(shares[tc])}
    for port in ports:
        config['PORT_QOS_MAP'][port] = {
            'dscp_to_tc_map': SONIC_MAP,
            'tc_to_pg_map': SONIC_MAP,
            'tc_to_queue_map': SONIC_MAP,
            'pfc_to_queue_map': SONIC_MAP,
            'pfc_enable': ','.join(str(prio) for prio in pfc),
        }
        for tc in _queue_classes(policy):
            queue = {'scheduler': _sonic_scheduler_name(policy, tc)}
            if tc == policy['roce']['priority']:
                queue['wred_profile'] = SONIC_WRED_PROFILE
            config['QUEUE']['%s|%d' % (port, tc)] = queue
        config['PORT'][port] = {'mtu': str(policy['mtu']['switch'])}
    return {
        'platform': 'sonic',
        'format': 'config_db-json',
        'extension': 'json',
        'config_db': config,
        'text': json.dumps(config, indent=4, sort_keys=True) + '\n',
    }


def _sonic_scheduler_name(policy, tc):
    if tc in policy['ets']['strict_classes']:
        return SONIC_STRICT_SCHEDULER
    return 'ROCE_DWRR_%d' % policy['ets']['bandwidth_percent'][tc]


def _sonic_wred(policy):
    ecn = policy['ecn']
    profile = {'ecn': 'ecn_all'}
    for color in ('green', 'yellow', 'red'):
        profile['wred_%s_enable' % color] = 'true'
        profile['%s_min_threshold' % color] = str(ecn['min_threshold_bytes'])
        profile['%s_max_threshold' % color] = str(ecn['max_threshold_bytes'])
        profile['%s_drop_probability' % color] = str(ecn['probability_percent'])
    return profile


def sonic_patch(desired, running):
    """RFC 6902 operations that bring ``running`` (CONFIG_DB JSON) to include ``desired``.

    Only what the policy owns is touched: whole tables or keys are added when missing, single
    fields are added or replaced. The result is what `config apply-patch` takes.
    """
    ops = []
    for table in sorted(desired):
        if table not in running:
            ops.append({'op': 'add', 'path': _pointer(table), 'value': desired[table]})
            continue
        for key in sorted(desired[table]):
            current = running[table].get(key)
            if current is None:
                ops.append({'op': 'add', 'path': _pointer(table, key), 'value': desired[table][key]})
                continue
            for field in sorted(desired[table][key]):
                value = desired[table][key][field]
                if field not in current:
                    ops.append({'op': 'add', 'path': _pointer(table, key, field), 'value': value})
                elif str(current[field]) != str(value):
                    ops.append({'op': 'replace', 'path': _pointer(table, key, field), 'value': value})
    return ops


def _pointer(*parts):
    return ''.join('/' + str(part).replace('~', '~0').replace('/', '~1') for part in parts)


def tree_changes(desired, running, path=''):
    """Leaves of ``desired`` that ``running`` lacks or holds with another value.

    Returns ``[{path, current, desired}]`` where ``current`` is None when the leaf is missing.
    """
    changes = []
    running = running if isinstance(running, dict) else {}
    for key in sorted(desired, key=str):
        value = desired[key]
        child = '%s/%s' % (path, key)
        if isinstance(value, dict) and value:
            changes.extend(tree_changes(value, running.get(key), child))
        elif isinstance(value, dict):
            if key not in running:
                changes.append({'path': child, 'current': None, 'desired': {}})
        elif key not in running or str(running[key]) != str(value):
            changes.append({'path': child, 'current': running.get(key), 'desired': value})
    return changes


# --- Arista EOS ------------------------------------------------------------------------------------

def render_eos(policy, ports, queue_keyword='uc-tx-queue'):
    """`arista.eos.eos_config` blocks (parents + lines) and the same configuration as CLI text."""
    blocks = [{'parents': [], 'lines': ['qos map dscp %d to traffic-class %d' % pair for pair in dscp_to_priority(policy)]}]
    for port in ports:
        parent = 'interface %s' % port
        lines = ['mtu %d' % policy['mtu']['switch'], 'qos trust dscp', 'priority-flow-control on']
        lines.extend('priority-flow-control priority %d no-drop' % prio for prio in sorted(policy['pfc']['priorities']))
        blocks.append({'parents': [parent], 'lines': lines})
        for tc in _queue_classes(policy):
            blocks.append({'parents': [parent, '%s %d' % (queue_keyword, tc)], 'lines': _eos_queue_lines(policy, tc)})
    return {
        'platform': 'eos',
        'format': 'eos-cli',
        'extension': 'cfg',
        'blocks': blocks,
        'text': eos_text(blocks),
    }


def _eos_queue_lines(policy, tc):
    if tc in policy['ets']['strict_classes']:
        return ['priority strict']
    # EOS queues are strict priority until `no priority` puts them into the weighted round robin.
    lines = ['no priority', 'bandwidth percent %d' % policy['ets']['bandwidth_percent'][tc]]
    if tc == policy['roce']['priority']:
        ecn = policy['ecn']
        lines.append('random-detect ecn minimum-threshold %d bytes maximum-threshold %d bytes max-mark-probability %d'
                     % (ecn['min_threshold_bytes'], ecn['max_threshold_bytes'], ecn['probability_percent']))
    return lines


def eos_text(blocks):
    """EOS running-config style text: three spaces per level, `!` between top-level sections."""
    out = []
    previous = None
    for block in blocks:
        parents = block['parents']
        if parents[:1] != previous:
            if out:
                out.append('!')
            previous = parents[:1]
            if parents:
                out.append(parents[0])
        for depth, parent in enumerate(parents[1:], start=1):
            out.append('   ' * depth + parent)
        out.extend('   ' * len(parents) + line for line in block['lines'])
    out.append('!')
    return '\n'.join(out) + '\n'
