# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The lossless RoCE policy: one data model for hosts and switches.

``DEFAULT_POLICY`` is the only place where the collection's default values live. Roles take
``roce_qos_policy`` as a (partial) override, and every consumer (the host module, the switch
renderers, the filters) resolves it with ``resolve_policy`` so a policy that cannot work is rejected
before anything is rendered or applied.

Traffic classes are numbered like priorities: priority N is carried by traffic class N on the NICs
and on the switches, so ETS shares and ECN settings are indexed by priority.
"""
from __future__ import annotations

import copy

VARIABLE = 'roce_qos_policy'

DEFAULT_POLICY = {
    'trust': 'dscp',
    'roce': {'dscp': 26, 'priority': 3},
    'cnp': {'dscp': 48, 'priority': 6},
    'pfc': {'priorities': [3]},
    'ecn': {'min_threshold_bytes': 150000, 'max_threshold_bytes': 1500000, 'probability_percent': 100},
    'ets': {'bandwidth_percent': [50, 0, 0, 50, 0, 0, 0, 0], 'strict_classes': [6]},
    'mtu': {'host': 9000, 'switch': 9214},
}

TRUST_MODES = ('dscp',)
DSCP_RANGE = (0, 63)
PRIORITY_RANGE = (0, 7)
# The one MTU range of the collection: fabric netdevs (fabric_network, fabric_plan.py) and the policy's host and switch
# MTUs. Below 1500 a RoCE port's active IB MTU drops to 1024 or less (RoCE takes the largest IB MTU, 256-4096, that
# fits in the netdev's) and the standard Ethernet frame every device on the path takes no longer fits: a fabric below
# 1500 is a misconfiguration, although IPv6 alone would work down to 1280. 9216 is the largest frame the fabric's
# switches take.
MTU_RANGE = (1500, 9216)
ECN_THRESHOLD_RANGE = (1, 256000000)
PROBABILITY_RANGE = (1, 100)


class PolicyError(ValueError):
    """A policy that cannot be rendered; ``errors`` lists one message per problem."""

    def __init__(self, errors):
        self.errors = list(errors)
        super(PolicyError, self).__init__('; '.join(self.errors))


def merge(base, override):
    """Deep-merge ``override`` into a copy of ``base``; lists and scalars replace, dicts merge."""
    result = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def resolve_policy(overrides=None, variable=VARIABLE):
    """Return the complete, validated policy: ``overrides`` merged over ``DEFAULT_POLICY``.

    Raises PolicyError naming the offending variable paths (``roce_qos_policy.roce.priority``).
    """
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, dict):
        raise PolicyError(['%s: must be a dictionary, got %s' % (variable, type(overrides).__name__)])
    policy = merge(DEFAULT_POLICY, overrides)
    errors = validate_policy(policy, variable)
    if errors:
        raise PolicyError(errors)
    return policy


def validate_policy(policy, variable=VARIABLE):
    """Return a list of error messages for a complete policy (empty when it is valid)."""
    errors = _unknown_keys(policy, DEFAULT_POLICY, variable)
    if errors:
        return errors
    errors.extend(_check_types(policy, variable))
    if errors:
        return errors
    for check in (_check_trust, _check_dscp, _check_priorities, _check_pfc, _check_ecn, _check_ets, _check_mtu):
        errors.extend(check(policy, variable))
    return errors


def dscp_to_priority(policy):
    """The DSCP → priority entries the policy sets, RoCE first: ``[(26, 3), (48, 6)]``."""
    return [(policy['roce']['dscp'], policy['roce']['priority']), (policy['cnp']['dscp'], policy['cnp']['priority'])]


def ets_classes(policy):
    """ETS traffic classes with a share, as ``[(class, percent)]`` in class order."""
    return [(tc, share) for tc, share in enumerate(policy['ets']['bandwidth_percent']) if share > 0]


def _unknown_keys(value, model, path):
    errors = []
    if not isinstance(value, dict):
        return ['%s: must be a dictionary, got %s' % (path, type(value).__name__)]
    for key in value:
        if key not in model:
            errors.append('%s.%s: unknown key (known: %s)' % (path, key, ', '.join(sorted(model))))
        elif isinstance(model[key], dict):
            errors.extend(_unknown_keys(value[key], model[key], '%s.%s' % (path, key)))
    return errors


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_types(policy, variable):
    errors = []
    for path, value, default in _leaves(policy, DEFAULT_POLICY, variable):
        if isinstance(default, list):
            if not isinstance(value, list) or not all(_is_int(item) for item in value):
                errors.append('%s: must be a list of integers, got %r' % (path, value))
        elif _is_int(default) and not _is_int(value):
            errors.append('%s: must be an integer, got %r' % (path, value))
        elif isinstance(default, str) and not isinstance(value, str):
            errors.append('%s: must be a string, got %r' % (path, value))
    return errors


def _leaves(value, model, path):
    for key, default in model.items():
        child = '%s.%s' % (path, key)
        if isinstance(default, dict):
            yield from _leaves(value[key], default, child)
        else:
            yield child, value[key], default


def _in_range(value, bounds):
    return bounds[0] <= value <= bounds[1]


def _range_error(path, value, bounds, what):
    return '%s: %s %d is outside %d-%d' % (path, what, value, bounds[0], bounds[1])


def _check_trust(policy, variable):
    if policy['trust'] not in TRUST_MODES:
        # RoCEv2 is routed and untagged: only the DSCP field survives from NIC to NIC.
        return ['%s.trust: %r is not supported (choices: %s)' % (variable, policy['trust'], ', '.join(TRUST_MODES))]
    return []


def _check_dscp(policy, variable):
    errors = []
    for section in ('roce', 'cnp'):
        value = policy[section]['dscp']
        if not _in_range(value, DSCP_RANGE):
            errors.append(_range_error('%s.%s.dscp' % (variable, section), value, DSCP_RANGE, 'DSCP'))
    if policy['roce']['dscp'] == policy['cnp']['dscp']:
        errors.append('%s.cnp.dscp: %d is also the RoCE DSCP (%s.roce.dscp), and CNPs need their own code point'
                      % (variable, policy['cnp']['dscp'], variable))
    return errors


def _check_priorities(policy, variable):
    errors = []
    for section in ('roce', 'cnp'):
        value = policy[section]['priority']
        if not _in_range(value, PRIORITY_RANGE):
            errors.append(_range_error('%s.%s.priority' % (variable, section), value, PRIORITY_RANGE, 'priority'))
    return errors


def _check_priority_list(values, path):
    errors = [_range_error(path, value, PRIORITY_RANGE, 'priority') for value in values if not _in_range(value, PRIORITY_RANGE)]
    if len(set(values)) != len(values):
        errors.append('%s: %r lists a priority twice' % (path, values))
    return errors


def _check_pfc(policy, variable):
    path = '%s.pfc.priorities' % variable
    pfc = policy['pfc']['priorities']
    if not pfc:
        return ['%s: must list at least the RoCE priority %d' % (path, policy['roce']['priority'])]
    errors = _check_priority_list(pfc, path)
    roce, cnp = policy['roce'], policy['cnp']
    if roce['priority'] not in pfc:
        errors.append('%s.roce.priority: RoCE DSCP %d maps to priority %d, which has no PFC (%s: %s), '
                      'so RoCE traffic would be dropped under congestion'
                      % (variable, roce['dscp'], roce['priority'], path, sorted(pfc)))
    if cnp['priority'] in pfc:
        errors.append('%s.cnp.priority: %d is a PFC priority (%s: %s), but congestion notifications must not be paused'
                      % (variable, cnp['priority'], path, sorted(pfc)))
    return errors


def _check_ecn(policy, variable):
    ecn = policy['ecn']
    errors = []
    for key in ('min_threshold_bytes', 'max_threshold_bytes'):
        if not _in_range(ecn[key], ECN_THRESHOLD_RANGE):
            errors.append(_range_error('%s.ecn.%s' % (variable, key), ecn[key], ECN_THRESHOLD_RANGE, 'threshold'))
    if ecn['max_threshold_bytes'] <= ecn['min_threshold_bytes']:
        errors.append('%s.ecn.max_threshold_bytes: %d must be above %s.ecn.min_threshold_bytes (%d)'
                      % (variable, ecn['max_threshold_bytes'], variable, ecn['min_threshold_bytes']))
    if not _in_range(ecn['probability_percent'], PROBABILITY_RANGE):
        errors.append(_range_error('%s.ecn.probability_percent' % variable, ecn['probability_percent'],
                                   PROBABILITY_RANGE, 'probability'))
    return errors


def _check_ets(policy, variable):
    shares = policy['ets']['bandwidth_percent']
    strict = policy['ets']['strict_classes']
    path = '%s.ets.bandwidth_percent' % variable
    if len(shares) != 8:
        return ['%s: needs one share per traffic class 0-7 (8 values), got %d' % (path, len(shares))]
    errors = ['%s[%d]: %d is outside 0-100' % (path, tc, share) for tc, share in enumerate(shares) if not 0 <= share <= 100]
    if sum(shares) != 100:
        errors.append('%s: shares sum to %d, must be 100' % (path, sum(shares)))
    errors.extend(_check_priority_list(strict, '%s.ets.strict_classes' % variable))
    for tc in strict:
        if 0 <= tc < 8 and shares[tc]:
            errors.append('%s[%d]: traffic class %d is strict (%s.ets.strict_classes), its share must be 0'
                          % (path, tc, tc, variable))
    roce = policy['roce']['priority']
    if _in_range(roce, PRIORITY_RANGE) and (roce in strict or not shares[roce]):
        errors.append('%s[%d]: RoCE traffic class %d needs an ETS share above 0 and must not be strict'
                      % (path, roce, roce))
    cnp = policy['cnp']['priority']
    if _in_range(cnp, PRIORITY_RANGE) and cnp not in strict and not shares[cnp]:
        errors.append('%s[%d]: CNP traffic class %d is neither strict (%s.ets.strict_classes) nor given a share'
                      % (path, cnp, cnp, variable))
    return errors


def _check_mtu(policy, variable):
    mtu = policy['mtu']
    errors = []
    for end in ('host', 'switch'):
        if not _in_range(mtu[end], MTU_RANGE):
            errors.append(_range_error('%s.mtu.%s' % (variable, end), mtu[end], MTU_RANGE, 'MTU'))
    if mtu['switch'] < mtu['host']:
        errors.append('%s.mtu.switch: %d is below %s.mtu.host (%d), so switch ports would drop full-size host frames'
                      % (variable, mtu['switch'], variable, mtu['host']))
    return errors
