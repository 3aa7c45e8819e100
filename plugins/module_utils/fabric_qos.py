# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The cluster-wide check of lossless RoCE: what the hosts' NICs and the switches' ports hold, read back, compared.

Each side has already compared itself with the policy (roce_host.py on the hosts, switch_qos_readback.py on the
switches); this compares the two sides with each other, as the traffic sees them: every device must map each RoCE
DSCP to the same priority, pause the same (lossless) priorities, and every switch port must carry the largest frame
a host sends. The read-backs are the facts the roles publish in the same run: ``roce_qos_readback`` (``interfaces``
with ``mtu`` and, for a RoCE NIC read back, ``qos``: ``trust``, ``dscp2prio``, ``pfc``) and ``switch_qos_readback``
(``state``: the vendor-neutral state, per port ``dscp_map``, ``pfc``, ``mtu``).

Linear in hosts and ports: every device is visited once and grouped by the value it holds.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import PolicyError, resolve_policy

# what a host's MTU-sized packet becomes on the wire: Ethernet header, an 802.1Q tag and the FCS. Vendors count a
# port's MTU with or without them; a switch port that carries this much carries the host's packets either way.
FRAME_OVERHEAD = 14 + 4 + 4


def check_fabric(hostvars, nodes, switches, overhead=FRAME_OVERHEAD):
    """Return ``{problems: [...], summary: str}`` for the read-backs of ``nodes`` and ``switches`` in ``hostvars``."""
    devices = []       # (name, {dscp: 'priority'}, 'pfc') of each device that read its QoS back
    mtus = []          # (mtu, name) of host interfaces and of switch ports
    dscps = set()
    missing, no_roce = [], []
    for host in nodes:
        hv = hostvars.get(host) or {}
        dscps.update(_policy_dscps(hv.get('roce_qos_policy')))
        readback = hv.get('roce_qos_readback')
        if not isinstance(readback, dict):
            missing.append(host)
            continue
        read = False
        for nic in readback.get('interfaces') or []:
            if not nic.get('present', True):
                continue
            name = '%s %s' % (host, '/'.join(part for part in (nic.get('ibdev'), nic.get('name')) if part))
            if isinstance(nic.get('mtu'), int):
                mtus.append(('host', nic['mtu'], name))
            qos = nic.get('qos')
            if isinstance(qos, dict):
                read = True
                dscp_map = dict((int(dscp), _text(prios)) for dscp, prios in (qos.get('dscp2prio') or {}).items())
                devices.append((name, dscp_map, _text(qos.get('pfc'))))
        if not read:
            no_roce.append(host)
    switch_ports = switch_mtus = 0
    for switch in switches:
        hv = hostvars.get(switch) or {}
        dscps.update(_policy_dscps(hv.get('switch_qos_policy', hv.get('roce_qos_policy'))))
        readback = hv.get('switch_qos_readback')
        if not isinstance(readback, dict):
            missing.append(switch)
            continue
        for port, held in sorted(((readback.get('state') or {}).get('ports') or {}).items()):
            name = '%s %s' % (switch, port)
            switch_ports += 1
            if isinstance(held.get('mtu'), int):
                mtus.append(('switch', held['mtu'], name))
                switch_mtus += 1
            dscp_map = dict((int(dscp), _text(tc)) for dscp, tc in (held.get('dscp_map') or {}).items())
            devices.append((name, dscp_map, _text(held.get('pfc'))))
    problems = []
    for dscp in sorted(dscps):
        problems.extend(_differ('DSCP %d maps to different priorities' % dscp,
                                [(dscp_map.get(dscp, 'none'), name) for name, dscp_map, _pfc in devices]))
    problems.extend(_differ('lossless (PFC) priorities differ', [(pfc, name) for name, _map, pfc in devices]))
    problems.extend(_mtu_problems(mtus, overhead))
    read_switches = [switch for switch in switches if switch not in missing]
    compared = ', '.join(str(dscp) for dscp in sorted(dscps)) or '-'
    summary = ('compared %d RoCE NICs, %d host interface MTUs and %d ports of %d switches (DSCP %s to priority, '
               'lossless priorities, MTU)' % (len(devices) - switch_ports, len(mtus) - switch_mtus, switch_ports,
                                              len(read_switches), compared))
    if no_roce:
        summary += '; hosts without a RoCE NIC read back (their MTU only): %s' % _names(no_roce)
    if missing:
        summary += '; not read back in this run: %s' % _names(missing)
    return {'problems': problems, 'summary': summary}


def _policy_dscps(overrides):
    """The RoCE and CNP DSCPs of a host's policy (an invalid one is check_inventory's to report)."""
    try:
        policy = resolve_policy(overrides or {})
    except PolicyError:
        return []
    return [policy['roce']['dscp'], policy['cnp']['dscp']]


def _text(value):
    if value is None:
        return 'unreadable'
    if isinstance(value, (list, tuple)):
        return ','.join(str(item) for item in sorted(value)) or 'none'
    return str(value)


def _differ(what, held):
    """One problem when the devices in ``held`` (value, name) do not all hold one value, the commonest value first."""
    groups = {}
    for value, name in held:
        groups.setdefault(value, []).append(name)
    if len(groups) < 2:
        return []
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return ['%s: %s' % (what, '; '.join('%s on %s' % (value, _names(names)) for value, names in ranked))]


def _mtu_problems(mtus, overhead):
    hosts = [(mtu, name) for side, mtu, name in mtus if side == 'host']
    ports = [(mtu, name) for side, mtu, name in mtus if side == 'switch']
    if not hosts or not ports:
        return []
    largest, sender = max(hosts, key=lambda item: (item[0], item[1]))
    small = sorted((mtu, name) for mtu, name in ports if mtu < largest + overhead)
    if not small:
        return []
    return ['MTU: %s sends %d-byte packets (%d-byte frames with Ethernet header, 802.1Q tag and FCS), more than %s carry'
            % (sender, largest, largest + overhead,
               _names(['%s (MTU %d)' % (name, mtu) for mtu, name in small]))]


def _names(names, limit=5):
    shown = ', '.join(names[:limit])
    return shown + (' and %d more' % (len(names) - limit) if len(names) > limit else '')
