# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Cluster-wide fabric addressing plan: checks and /etc/hosts entries built once from inventory.

Everything here is linear in the number of interfaces so that a 1000-node inventory is checked in one pass on
the controller instead of one task per host pair.
"""
from __future__ import annotations
import ipaddress

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import (
    hostname_problem,
    ifname_problem,
    label_problem,
    mac_problem,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import MTU_RANGE

# the names every node's /etc/hosts (Debian's, Red Hat's) gives its loopback and IPv6's multicast groups, and the
# .localhost domain (RFC 6761): as a fabric name each would lead a peer to itself or nowhere
LOCAL_NAMES = frozenset(['localhost', 'localhost.localdomain', 'localhost4', 'localhost4.localdomain4', 'localhost6',
                         'localhost6.localdomain6', 'ip6-localhost', 'ip6-loopback', 'ip6-localnet',
                         'ip6-mcastprefix', 'ip6-allnodes', 'ip6-allrouters'])


def local_name(name):
    """Whether ``name`` resolves to the node it is looked up on (case-insensitive, as DNS and /etc/hosts compare)."""
    name = name.lower()
    return name in LOCAL_NAMES or name.endswith('.localhost')


def _rail_networks(rails, problems):
    networks = []
    for i, rail in enumerate(rails or []):
        where = 'fabric_network_rails[%d]' % i
        try:
            net = ipaddress.ip_network(str(rail.get('subnet')), strict=True)
        except (ValueError, TypeError, AttributeError) as exc:
            problems.append('%s.subnet: %s is not a network address with a prefix (%s)' % (where, rail.get('subnet') if isinstance(rail, dict) else rail, exc))
            net = None
        networks.append(net)
        if isinstance(rail, dict) and rail.get('name') is not None and label_problem(rail['name']):
            problems.append('%s.name: %s (it is part of every node\'s fabric name)' % (where, label_problem(rail['name'])))
    seen = []
    for i, net in enumerate(networks):
        for j, other in seen:
            if net is not None and net.version == other.version and net.overlaps(other):
                problems.append('fabric_network_rails[%d].subnet %s overlaps fabric_network_rails[%d].subnet %s' % (i, net, j, other))
        if net is not None:
            seen.append((i, net))
    return networks


def interface_names(host, iface, rails):
    """Return the /etc/hosts names of one fabric interface: its ``hostname`` or ``<host>-<rail name>``."""
    if iface.get('hostname'):
        return [iface['hostname']]
    rail = iface.get('rail', 0)
    if isinstance(rail, int) and 0 <= rail < len(rails or []) and rails[rail].get('name'):
        return ['%s-%s' % (host, rails[rail]['name'])]
    return ['%s-rail%s' % (host, rail)]


def check_plan(hostvars, hosts, rails, default_mtu, others=None):
    """Return a list of problems (strings naming the variable and the host) with the fabric plan.

    A host's own ``fabric_network_mtu`` overrides ``default_mtu`` for its interfaces without an ``mtu``.
    ``others`` maps the inventory's other hosts (switches, login nodes) to their ``ansible_host``: no fabric name
    may be one of their names, and no fabric address any host's management address.
    """
    problems = []
    networks = _rail_networks(rails, problems)
    others = others or {}
    addresses = {}
    for host, address in [(h, hostvars.get(h, {}).get('ansible_host')) for h in hosts] + list(others.items()):
        try:
            addresses.setdefault(ipaddress.ip_address(str(address)), (host, 'ansible_host'))
        except ValueError:
            pass
    names = dict((other, other) for other in others)
    host_set = set(hosts) | set(others)
    macs = {}
    for host in hosts:
        ifaces = hostvars.get(host, {}).get('fabric_network_interfaces') or []
        if not isinstance(ifaces, list):
            problems.append('fabric_network_interfaces on %s: must be a list, got %s' % (host, type(ifaces).__name__))
            continue
        seen_ifaces = set()
        host_mtu = hostvars.get(host, {}).get('fabric_network_mtu', default_mtu)
        for i, iface in enumerate(ifaces):
            problems.extend(_check_interface(host, i, iface, rails, networks, host_mtu, seen_ifaces, addresses, names, host_set))
            if hostvars.get(host, {}).get('fabric_network_allow_default_route') is not True:
                problems.extend(_default_routes(host, i, iface))
        facts = hostvars.get(host, {}).get('ansible_facts')
        problems.extend(_identity_problems(host, ifaces, facts if isinstance(facts, dict) else {}, macs))
    return problems


def _nic_macs(facts):
    """``{kernel name: lowercase MAC}`` of the host's NICs, from its network facts where the run has them."""
    found = {}
    for name in facts.get('interfaces') or []:
        mac = (facts.get(str(name).replace('-', '_')) or {}).get('macaddress')
        if isinstance(mac, str) and mac:
            found[name] = mac.lower()
    return found


def _identity_problems(host, ifaces, facts, macs):
    """Each entry one NIC of its own: no MAC of another entry (``macs``: ``{mac: (host, entry)}`` across hosts), no rail
    of another entry of the host and, where the host's facts know its NICs, a name and a MAC of the same NIC.

    An entry with both is matched by its MAC and the NIC renamed to its name (netplan's set-name, the .link file): with
    another NIC's MAC it would take that NIC, the management one included, and rename it.
    """
    out = []
    rails = {}
    nic_macs = _nic_macs(facts)
    mac_nics = {}
    for name, mac in nic_macs.items():
        mac_nics.setdefault(mac, name)
    for i, iface in enumerate(ifaces):
        if not isinstance(iface, dict):
            continue
        where = 'fabric_network_interfaces[%d]' % i
        mac, name = iface.get('mac'), iface.get('name')
        if isinstance(mac, str) and not mac_problem(mac):
            mac = mac.lower()
            owner = macs.setdefault(mac, (host, where))
            if owner != (host, where):
                out.append('%s.mac on %s: %s is also the MAC of %s on %s; a MAC names one NIC (an entry copied with its '
                           'MAC?)' % (where, host, mac, owner[1], owner[0]))
            elif isinstance(name, str) and not ifname_problem(name):
                holder, named = mac_nics.get(mac), nic_macs.get(name)
                if (holder is not None and holder != name) or (named is not None and named != mac):
                    facts_say = ['%s has MAC %s' % (name, named)] if named else []
                    facts_say += ['%s is the MAC of %s' % (mac, holder)] if holder else []
                    out.append('%s on %s: name %s and mac %s are two NICs (%s): the entry would match the MAC\'s NIC '
                               'and rename it %s' % (where, host, name, mac, '; '.join(facts_say), name))
        rail = iface.get('rail', 0)
        if isinstance(rail, int) and not isinstance(rail, bool):
            first = rails.setdefault(rail, where)
            if first != where:
                out.append('%s.rail on %s: rail %d already has %s; a node has one NIC per rail (two addresses in one '
                           'subnet answer ARP for each other and route replies out of either)' % (where, host, rail, first))
    return out


def _check_interface(host, i, iface, rails, networks, default_mtu, seen_ifaces, addresses, names, host_set):
    where = 'fabric_network_interfaces[%d]' % i
    out = []
    if not isinstance(iface, dict):
        return ['%s on %s: must be a dict with name or mac, address and rail' % (where, host)]
    for field, rule in (('name', ifname_problem), ('mac', mac_problem), ('hostname', hostname_problem)):
        if iface.get(field) is not None and rule(iface[field]):
            out.append('%s.%s on %s: %s' % (where, field, host, rule(iface[field])))
    if out:
        return out
    key = iface.get('name') or iface.get('mac')
    if not key:
        out.append('%s on %s: give the interface a name or a mac' % (where, host))
    elif key in seen_ifaces:
        out.append('%s on %s: interface %s is listed twice' % (where, host, key))
    seen_ifaces.add(key)

    mtu = iface.get('mtu', default_mtu)
    if not isinstance(mtu, int) or isinstance(mtu, bool) or not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        out.append('%s.mtu on %s: %s is outside %d-%d' % (where, host, mtu, MTU_RANGE[0], MTU_RANGE[1]))

    rail = iface.get('rail', 0)
    net = None
    if not isinstance(rail, int) or isinstance(rail, bool) or not 0 <= rail < len(networks):
        out.append('%s.rail on %s: %s is not an index of fabric_network_rails (0-%d)' % (where, host, rail, len(networks) - 1))
    else:
        net = networks[rail]

    try:
        addr = ipaddress.ip_interface(str(iface.get('address')))
    except ValueError:
        out.append('%s.address on %s: %s is not an address with a prefix, e.g. 10.78.0.11/24' % (where, host, iface.get('address')))
        addr = None
    if addr is not None:
        if net is not None and (addr.ip not in net or addr.network.prefixlen != net.prefixlen):
            out.append('%s.address on %s: %s is outside rail %d subnet %s' % (where, host, addr, rail, net))
        if net is not None and addr.ip in (net.network_address, net.broadcast_address) and net.num_addresses > 2:
            out.append('%s.address on %s: %s is the network or broadcast address of %s' % (where, host, addr.ip, net))
        owner = addresses.setdefault(addr.ip, (host, key))
        if owner != (host, key):
            out.append('%s.address on %s: %s is already used by %s (%s)' % (where, host, addr.ip, owner[0], owner[1]))

    out.extend(_check_routes(where, host, iface.get('routes'), addr))
    for name in interface_names(host, iface, rails):
        if hostname_problem(name):
            out.append('%s on %s: its fabric name %s' % (where, host, hostname_problem(name)))
            continue
        if local_name(name):
            out.append('%s%s on %s: fabric hostname %s resolves locally on every node (/etc/hosts\' loopback and IPv6 '
                       'names, .localhost), so no peer would reach this node by it'
                       % (where, '.hostname' if iface.get('hostname') else '', host, name))
            continue
        owner = names.setdefault(name, host)
        if owner != host or (name in host_set and name != host):
            out.append('%s on %s: fabric hostname %s is already used by %s' % (where, host, name, owner if owner != host else name))
    return out


def _default_routes(host, i, iface):
    """A default route on a rail: it would take every other destination off the management network."""
    out = []
    for j, route in enumerate((iface.get('routes') or []) if isinstance(iface, dict) else []):
        try:
            default = isinstance(route, dict) and ipaddress.ip_network(str(route.get('to'))).prefixlen == 0
        except ValueError:
            continue
        if default:
            out.append('fabric_network_interfaces[%d].routes[%d].to on %s: %s is a default route, which would send '
                       'all other traffic over the fabric; set fabric_network_allow_default_route: true if that is '
                       'meant' % (i, j, host, route.get('to')))
    return out


def _check_routes(where, host, routes, addr):
    """Each route's destination is a network and its gateway is on the interface's own subnet."""
    out = []
    for j, route in enumerate(routes or []):
        at = '%s.routes[%d]' % (where, j)
        if not isinstance(route, dict):
            out.append('%s on %s: must be a dict with to and via' % (at, host))
            continue
        try:
            ipaddress.ip_network(str(route.get('to')), strict=True)
        except ValueError:
            out.append('%s.to on %s: %r is not a network with a prefix, e.g. 10.200.0.0/16' % (at, host, route.get('to')))
        try:
            via = ipaddress.ip_address(str(route.get('via')))
        except ValueError:
            out.append('%s.via on %s: %r is not an address' % (at, host, route.get('via')))
            continue
        if addr is not None and (via not in addr.network or via == addr.ip):
            out.append('%s.via on %s: gateway %s is not another address on %s, the interface\'s subnet'
                       % (at, host, via, addr.network))
    return out


def hosts_entries(hostvars, hosts, rails):
    """Return /etc/hosts lines ``<address> <names...>`` for every fabric interface of every host, in host order."""
    lines = []
    for host in hosts:
        for iface in hostvars.get(host, {}).get('fabric_network_interfaces') or []:
            addr = ipaddress.ip_interface(str(iface['address'])).ip
            lines.append('%s %s' % (addr, ' '.join(interface_names(host, iface, rails))))
    return lines


def primary_names(hostvars, hosts, rails):
    """Return ``{host: fabric name}`` of each host's first fabric interface (the name MPI launches over)."""
    result = {}
    for host in hosts:
        ifaces = hostvars.get(host, {}).get('fabric_network_interfaces') or []
        result[host] = interface_names(host, ifaces[0], rails)[0] if ifaces else host
    return result


def host_aliases(hostvars, hosts, rails):
    """Return ``{host: [inventory name, ansible_host, fabric names..., fabric addresses...]}`` without repeats.

    These are every name a peer may use to reach the host, i.e. what its known_hosts line must list.
    """
    result = {}
    for host in hosts:
        hv = hostvars.get(host, {})
        aliases = [host, str(hv.get('ansible_host', host))]
        for iface in hv.get('fabric_network_interfaces') or []:
            aliases.extend(interface_names(host, iface, rails))
            aliases.append(str(ipaddress.ip_interface(str(iface['address'])).ip))
        result[host] = list(dict.fromkeys(aliases))
    return result
