# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""LNet, the Lustre client's network layer: the persistent configuration the storage role writes from
``storage_lnet_networks``, and what ``lnetctl net show`` and ``lnetctl ping`` say about it.

The configuration is the YAML that ``lnetctl import`` reads and that the lnet service imports from /etc/lnet.conf at
boot; the read-back is ``lnetctl net show``, also YAML. Both are parsed here, on the controller, where PyYAML is
always present (Ansible needs it), rather than on the node.

LNet names network number 0 without its number (``o2ib0`` is shown as ``o2ib``, and NIDs as ``10.0.0.1@o2ib``), so
every network name is compared in that canonical form.
"""
from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import lnet_network_parts

_NID = re.compile(r'^[A-Za-z0-9_.:-]+@(?P<net>[a-z][a-z0-9]*)$')


def canonical_net(net):
    """``o2ib0`` and ``o2ib`` are one network: the name LNet prints, without a number 0."""
    # a type can hold digits itself (o2ib): the number is what trails it
    kind = net.rstrip('0123456789')
    number = int(net[len(kind):] or 0)
    return kind + (str(number) if number else '')


def nid_net(nid):
    """The canonical network of a NID (``10.0.0.1@o2ib0`` -> ``o2ib``), or None when it is not ``address@net``."""
    match = _NID.match(nid) if isinstance(nid, str) else None
    return canonical_net(match.group('net')) if match else None


def planned_networks(specs):
    """``[{net, interfaces, cpts}]`` of ``storage_lnet_networks`` (``o2ib0(ib0,ib1)``), nets in canonical form.

    Raises ValueError naming the first spec that is not an LNet network (the role's checks refuse it earlier).
    """
    planned = []
    for spec in specs:
        parts = lnet_network_parts(spec)
        if parts is None:
            raise ValueError('%r is not an LNet network spec such as o2ib0(ib0)' % (spec,))
        net, interfaces, cpts = parts
        planned.append({'net': canonical_net(net), 'interfaces': interfaces, 'cpts': cpts})
    return planned


def lnet_conf(specs):
    """The text of /etc/lnet.conf for ``storage_lnet_networks``: one network per spec, one local NI per interface
    (LNet Multi-Rail: each interface is its own NI of the network), the spec's CPT list on each of them."""
    lines = ['net:']
    for network in planned_networks(specs):
        lines += ['    - net type: %s' % network['net'], '      local NI(s):']
        for interface in network['interfaces']:
            lines += ['        - interfaces:', '              0: %s' % interface]
            if network['cpts']:
                lines.append('          CPT: "%s"' % network['cpts'])
    return '\n'.join(lines) + '\n'


def error_text(tree):
    """The ``descr`` (or ``errno``) lnetctl puts in its YAML error answer, wherever it nests it."""
    if isinstance(tree, dict):
        if 'descr' in tree or 'errno' in tree:
            return str(tree.get('descr') or 'errno %s' % tree.get('errno')).strip()
        values = tree.values()
    elif isinstance(tree, list):
        values = tree
    else:
        return None
    for value in values:
        found = error_text(value)
        if found:
            return found
    return None


def _interfaces(ni):
    interfaces = ni.get('interfaces') or {}
    if isinstance(interfaces, dict):
        return [str(value) for _key, value in sorted(interfaces.items(), key=lambda item: str(item[0]))]
    if isinstance(interfaces, list):
        return [str(value) for value in interfaces]
    return [str(interfaces)]


def net_show(tree):
    """``{net: [{nid, status, interfaces}]}`` of a parsed ``lnetctl net show``; the loopback network left out.

    Raises ValueError with lnetctl's own message when the answer is an error (``Network is down``) or not the
    ``net:`` list it prints.
    """
    error = error_text(tree)
    if error:
        raise ValueError(error)
    if not isinstance(tree, dict) or not isinstance(tree.get('net'), list):
        raise ValueError('not the net: list of lnetctl net show')
    nets = {}
    for net in tree['net']:
        if not isinstance(net, dict) or net.get('net type') in (None, 'lo'):
            continue
        nis = nets.setdefault(canonical_net(str(net['net type'])), [])
        for ni in net.get('local NI(s)') or []:
            if isinstance(ni, dict):
                nis.append({'nid': str(ni.get('nid', '')), 'status': str(ni.get('status', 'unknown')),
                            'interfaces': _interfaces(ni)})
    return nets


def net_problems(specs, tree):
    """One line per planned network interface that ``lnetctl net show`` (parsed: ``tree``) does not show up: the
    network missing, no NI on the interface, or its NID not ``up``. A show that cannot be read is one line."""
    try:
        shown = net_show(tree)
    except ValueError as exc:
        return ['lnetctl net show: %s' % exc]
    problems = []
    for network in planned_networks(specs):
        nis = shown.get(network['net'])
        if nis is None:
            problems.append('LNet network %s is not configured (lnetctl net show lists %s)' % (
                network['net'], ', '.join(sorted(shown)) or 'no network but lo'))
            continue
        for interface in network['interfaces']:
            on_interface = [ni for ni in nis if interface in ni['interfaces']]
            if not on_interface:
                problems.append('LNet network %s has no NI on %s' % (network['net'], interface))
            problems += ['LNet NID %s on %s is %s, not up' % (ni['nid'], interface, ni['status'])
                         for ni in on_interface if ni['status'] != 'up']
    return problems


def ping_problem(nid, rc, tree):
    """Why ``lnetctl ping <nid>`` did not reach ``nid`` (its exit status ``rc`` and parsed YAML answer ``tree``), or
    None when the peer answered with at least one NI."""
    if rc == 0 and isinstance(tree, dict):
        answers = tree.get('ping') or []
        if any(isinstance(answer, dict) and answer.get('peer ni') for answer in answers):
            return None
    return 'lnetctl ping %s failed (exit %s): %s' % (nid, rc, error_text(tree) or 'no peer NI in its answer')
