# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Cross-host checks of the lossless RoCE policy: every node and switch must carry the same one."""
from __future__ import annotations
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import PolicyError, resolve_policy

# what both ends of a link must agree on for RoCE traffic to be lossless (ECN and ETS may be tuned per device)
AGREEMENT_KEYS = ('trust', 'roce', 'cnp', 'pfc')


def _signature(policy):
    return tuple((key, repr(policy[key])) for key in AGREEMENT_KEYS)


def check_qos(hostvars, nodes, switches):
    """Return problems: invalid policies, nodes and switches that disagree, host MTUs above the switch MTU.

    Linear in the number of hosts: each host's policy is resolved once and compared by signature.
    """
    problems = []
    groups = {}
    for host, variable in [(h, 'roce_qos_policy') for h in nodes] + [(h, 'switch_qos_policy') for h in switches]:
        hv = hostvars.get(host, {})
        overrides = hv.get(variable, hv.get('roce_qos_policy', {})) or {}
        try:
            policy = resolve_policy(overrides, variable)
        except PolicyError as exc:
            problems.extend('%s on %s' % (error, host) for error in exc.errors)
            continue
        groups.setdefault(_signature(policy), []).append(host)
        if host in nodes:
            problems.extend(_mtu_problems(host, hv, policy))
    if len(groups) > 1:
        ranked = sorted(groups.values(), key=len, reverse=True)
        problems.append('RoCE policy (trust, roce, cnp, pfc) differs: %s use one policy, %s another%s' % (
            _names(ranked[0]), _names(ranked[1]), '' if len(ranked) == 2 else ' (%d variants in all)' % len(ranked)))
    return problems


def _mtu_problems(host, hv, policy):
    out = []
    default = hv.get('fabric_network_mtu', 9000)
    for i, iface in enumerate(hv.get('fabric_network_interfaces') or []):
        mtu = iface.get('mtu', default) if isinstance(iface, dict) else default
        if isinstance(mtu, int) and mtu > policy['mtu']['switch']:
            out.append('fabric_network_interfaces[%d].mtu on %s: %d is above the switch port MTU %d (roce_qos_policy.mtu.switch)'
                       % (i, host, mtu, policy['mtu']['switch']))
    if isinstance(default, int) and default != policy['mtu']['host']:
        out.append('fabric_network_mtu on %s: %d differs from roce_qos_policy.mtu.host %d' % (host, default, policy['mtu']['host']))
    return out


def _names(hosts, limit=5):
    shown = ', '.join(hosts[:limit])
    return shown + (' and %d more' % (len(hosts) - limit) if len(hosts) > limit else '')
