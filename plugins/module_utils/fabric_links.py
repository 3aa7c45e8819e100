# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""A host's fabric interfaces against the links its kernel has (``ip -json link show``), before fabric_network
configures them.

The cluster model resolves an interface given by MAC from the network facts; this reads the links the host has at
the moment the role runs, with the same rule (``cluster_model.interface_name``), so that a missing NIC or a wrong
MAC stops the role before it writes anything.
"""
from __future__ import annotations

import json

from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import interface_name


def parse_ip_link(text):
    """The links of ``ip -json link show`` output: a list of ``{ifname, address, ...}`` as ip prints them."""
    try:
        links = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ValueError('ip -json link show printed no JSON (%s): %.200r' % (exc, text)) from exc
    if not isinstance(links, list) or not all(isinstance(link, dict) and isinstance(link.get('ifname'), str)
                                              for link in links):
        raise ValueError('ip -json link show printed no list of links with ifname: %.200r' % (text,))
    return links


def resolve_interfaces(interfaces, ip_link_output, mtu):
    """``{interfaces, missing, present}`` for ``fabric_network_interfaces`` on a host whose ``ip -json link show``
    printed ``ip_link_output``.

    ``interfaces``: each entry with ``name`` its kernel name (its own, else the link with its MAC; None when
    neither), ``mtu`` its own or ``mtu`` (``fabric_network_mtu``), ``routes`` its own or none; other keys kept.
    ``missing``: per entry whose interface the host lacks, what the inventory gave for it (the name, else the
    MAC), in list order. ``present``: the host's link names, in ip's order. ``netplan``: ``netplan_config`` of the
    interfaces the host has.
    """
    links = parse_ip_link(ip_link_output)
    present = [link['ifname'] for link in links]
    by_mac = {}
    for link in links:
        if link.get('address'):
            by_mac.setdefault(str(link['address']).lower(), link['ifname'])
    resolved, missing = [], []
    for iface in interfaces:
        if not isinstance(iface, dict):
            raise TypeError('fabric_network_interfaces entries must be mappings, got %s' % type(iface).__name__)
        name = interface_name(iface, by_mac)
        resolved.append(dict(iface, name=name, mtu=iface.get('mtu') or mtu, routes=iface.get('routes') or []))
        if name not in present:
            missing.append(iface.get('name') or iface.get('mac') or '(an entry with neither name nor mac)')
    return {'interfaces': resolved, 'missing': missing, 'present': present,
            'netplan': netplan_config([iface for iface in resolved if iface['name'] in present])}


def netplan_config(interfaces):
    """The netplan document of resolved fabric interfaces, as data for a YAML serializer (a value written into YAML
    by hand could open a mapping or a second document): static address, MTU, no DHCP or link-local address,
    matched by MAC where one is given."""
    ethernets = {}
    for iface in interfaces:
        entry = {'match': {'macaddress': iface['mac'].lower()}, 'set-name': iface['name']} if iface.get('mac') else {}
        entry.update({'mtu': iface['mtu'], 'dhcp4': False, 'dhcp6': False, 'link-local': [], 'optional': True,
                      'addresses': [iface['address']]})
        if iface.get('routes'):
            entry['routes'] = [{'to': route['to'], 'via': route['via']} for route in iface['routes']]
        ethernets[iface['name']] = entry
    return {'network': {'version': 2, 'renderer': 'networkd', 'ethernets': ethernets}}
