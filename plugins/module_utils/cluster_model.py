# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The cluster model: every per-node decision that spans roles, computed once from the inventory and the facts.

``build_model(hostvars, hosts)`` is the one function behind ``check_inventory.yml`` (inventory only) and the
``cluster_model`` role (inventory plus the facts it gathered), which every other role reads instead of computing
its own answer. Per node it holds the fabric interfaces (name or MAC, rail, address, MTU), their fabric names, the
names peers use for its SSH host key, its MPI slots, its RDMA ports, the resolved RoCE policy, and the job
environment that every launch path exports (mpirun, the rank wrapper, login shells). ``docs/cluster_model.md``
says who reads what.

Work is linear in the number of interfaces. Inventory values are read with the roles' documented defaults
(``DEFAULTS``; a unit test holds them equal to the roles' argument specs).
"""

from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.fabric_plan import (
    check_plan, host_aliases, hosts_entries, interface_names,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_info import CUDA_TRANSPORTS as UCX_CUDA_TRANSPORTS
# the ToS byte the jobs' UCX and NCCL put on RoCE traffic is the one the roce_qos role writes into RDMA-CM's defaults
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_host import traffic_class
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import PolicyError, resolve_policy

# The inventory variables the model reads, with the defaults of the roles that declare them.
DEFAULTS = {
    'fabric_network_interfaces': [],
    'fabric_network_rails': [],
    'fabric_network_mtu': 9000,
    'mpi_cuda': False,
    'mpi_ucx_tls': None,
    'mpi_ucx_net_devices': None,
    'mpi_env_extra': {},
    'mpi_hostfile_slots': None,
    'roce_qos_policy': {},
    'ssh_trust_user': 'mpiuser',
    'mpi_hostfile_path': '/etc/mpi/hostfile',
}
_ENV_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
# mca_base_env_list separates entries with ';'; a newline would end the MCA line or the profile.d export


def _setting(hostvars, host, name):
    value = hostvars.get(host, {}).get(name)
    return DEFAULTS[name] if value is None else value


def overridden_inputs(effective, host_variables):
    """Names of the model's inputs whose value where a role runs (``effective``: name -> value, None when unset) is
    not the host's own (inventory, extra vars, set_fact): a play or role variable, which the model cannot see.
    """
    found = []
    for name in DEFAULTS:
        value = effective.get(name)
        own = host_variables.get(name)
        if (DEFAULTS[name] if value is None else value) != (DEFAULTS[name] if own is None else own):
            found.append(name)
    return found


def _facts(hostvars, host):
    facts = hostvars.get(host, {}).get('ansible_facts')
    return facts if isinstance(facts, dict) else {}


def _mac_names(facts):
    """``{mac: kernel name}`` from the network facts (``ansible_facts.interfaces`` and each interface's facts)."""
    names = {}
    for name in facts.get('interfaces') or []:
        mac = (facts.get(name.replace('-', '_')) or {}).get('macaddress')
        if mac:
            names.setdefault(mac.lower(), name)
    return names


def interface_name(iface, mac_names):
    """The kernel name of a ``fabric_network_interfaces`` entry: its ``name``, else the name its ``mac`` has in
    ``mac_names`` (``{lowercase mac: kernel name}``); None when neither gives one.
    """
    mac = iface.get('mac')
    return iface.get('name') or (mac_names.get(str(mac).lower()) if mac else None)


def _interfaces(hostvars, host, rails, mac_names):
    """The host's fabric interfaces with their kernel names (resolved from the MAC where facts allow), MTU, names."""
    host_mtu = _setting(hostvars, host, 'fabric_network_mtu')
    result = []
    for iface in _setting(hostvars, host, 'fabric_network_interfaces'):
        mac = iface.get('mac')
        name = interface_name(iface, mac_names)
        result.append({
            'name': name,
            'mac': str(mac).lower() if mac else None,
            'rail': iface.get('rail', 0),
            'address': str(iface.get('address')),
            'mtu': iface.get('mtu') or host_mtu,
            'names': interface_names(host, iface, rails),
        })
    return result


def _rdma_ports(interfaces, facts):
    """The Active-or-not RDMA ports behind the host's fabric netdevs, in interface (rail) order.

    ``ansible_facts.ib`` (``hpcfabric.cluster.ib_facts``) maps each port to its netdev; a fabric interface without
    an RDMA port behind it (a plain Ethernet NIC, the lab's veth) gives none.
    """
    by_netdev = {}
    for device, info in sorted(((facts.get('ib') or {}).get('devices') or {}).items()):
        for number, port in sorted((info.get('ports') or {}).items()):
            if port.get('netdev'):
                by_netdev.setdefault(port['netdev'], (device, number, port))
    ports = []
    for iface in interfaces:
        if iface['name'] in by_netdev:
            device, number, port = by_netdev[iface['name']]
            ports.append({'device': device, 'port': int(number), 'netdev': iface['name'], 'rail': iface['rail'],
                          'link_layer': port.get('link_layer'), 'state': port.get('state'),
                          'gid_index': port.get('roce_v2_gid_index')})
    return ports


def _slots(hostvars, host, facts):
    """``(slots, source)``: ``mpi_hostfile_slots``, else the GPU count gathered on the node, else ``(None, None)``."""
    explicit = _setting(hostvars, host, 'mpi_hostfile_slots')
    if explicit is not None:
        return explicit, 'mpi_hostfile_slots'
    gpus = (facts.get('gpu_topology') or {}).get('gpu_count')
    if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 0:
        return gpus, 'gpu_count'
    return None, None


def _usable(device, active):
    """A rail's device a rank may be pinned to: an Active RDMA ``device:port``, or a netdev (TCP, the lab)."""
    return ':' not in device or device in active


def rank_bindings(ports, facts, rails, slots):
    """Per local rank of an all-node job: ``{local_rank, gpu, gpu_index, net_devices, rail, numa_node}``.

    With GPU facts, one rank per GPU in ``nvidia-smi`` order: it drives the rails ``rail_bindings`` paired with its GPU
    (near and free first), so that GPU i of every node meets the same rail and the ring engine's rings are the
    fabric's rails; a GPU no rail chose drives the Active RDMA ports nearest it. Without GPU facts, one rank per slot
    and the rails shared round robin (slot l: rails l, l + slots, ...). ``rail`` is the rail a rank drives when it
    drives exactly one. Binding only: the devices are a subset of the job environment's ``UCX_NET_DEVICES``, never
    another transport; ``None`` leaves a setting as the job environment has it.
    """
    active = set('%s:%d' % (p['device'], p['port']) for p in ports if p['state'] == 'Active')
    gpus = (facts.get('gpu_topology') or {}).get('gpus') or []
    ranks = []
    for gpu in gpus:
        mine = [rail for rail in rails if rail['local_rank'] == gpu.get('index') and _usable(rail['net_device'], active)]
        devices = [rail['net_device'] for rail in mine]
        if not devices:
            devices = sorted(device for device in active if device.split(':')[0] in (gpu.get('nearest_nics') or []))
        numa = gpu.get('numa_nodes') or []
        ranks.append({'local_rank': gpu.get('index'), 'gpu': gpu.get('name'), 'gpu_index': gpu.get('index'),
                      'net_devices': ','.join(devices) or None, 'rail': mine[0]['rail'] if len(mine) == 1 else None,
                      'numa_node': numa[0] if numa else None})
    if gpus or not slots or not rails:
        return ranks
    for local_rank in range(slots):
        mine = [rail for index, rail in enumerate(rails) if index % slots == local_rank] if slots <= len(rails) \
            else [rails[local_rank % len(rails)]]
        mine = [rail for rail in mine if _usable(rail['net_device'], active)]
        ranks.append({'local_rank': local_rank, 'gpu': None, 'gpu_index': None,
                      'net_devices': ','.join(rail['net_device'] for rail in mine) or None,
                      'rail': mine[0]['rail'] if len(mine) == 1 else None, 'numa_node': None})
    return ranks


def rail_bindings(interfaces, ports, facts):
    """Per rail of the node, what a one-rank-per-node job on that rail alone uses (the isolation's per-rail runs, all
    rails of a node at once): ``{rail, interface, net_device, local_rank, numa_node}``. ``net_device`` pins UCX to the
    rail: the RDMA ``device:port`` behind its netdev, else the netdev (TCP). ``local_rank`` is a GPU (its index, as in
    ``ranks``): a free one nearest the rail's device, else any free one, else (more rails than GPUs) the nearest;
    ``None`` without GPU facts.
    """
    by_netdev = dict((port['netdev'], port) for port in ports)
    gpus = [gpu for gpu in (facts.get('gpu_topology') or {}).get('gpus') or [] if isinstance(gpu.get('index'), int)]
    rails = []
    near = {}
    for iface in interfaces:
        if not iface.get('name') or any(rail['rail'] == iface['rail'] for rail in rails):
            continue
        port = by_netdev.get(iface['name'])
        near[iface['rail']] = [gpu for gpu in gpus if port and port['device'] in (gpu.get('nearest_nics') or [])]
        rails.append({'rail': iface['rail'], 'interface': iface['name'],
                      'net_device': '%s:%d' % (port['device'], port['port']) if port else iface['name']})
    chosen = {}
    # rails near a GPU choose first, so that a rail near none cannot take theirs; a rail shares a GPU only when every
    # GPU is taken
    for stage in ('near', 'free', 'shared'):
        for rail in [rail for rail in rails if rail['rail'] not in chosen]:
            taken = set(gpu['index'] for gpu in chosen.values())
            if stage == 'shared':
                pool = near[rail['rail']] or gpus
            else:
                pool = [gpu for gpu in (near[rail['rail']] if stage == 'near' else gpus) if gpu['index'] not in taken]
            if pool:
                chosen[rail['rail']] = pool[0]
    for rail in rails:
        gpu = chosen.get(rail['rail']) or {}
        numa = gpu.get('numa_nodes') or []
        rail.update(local_rank=gpu.get('index'), numa_node=numa[0] if numa else None)
    return rails


def _csv(values):
    return ','.join(str(v) for v in values)


def job_environment(hostvars, host, interfaces, ports, policy, problems, warnings):
    """The node's job environment: what every rank and every login shell on it gets.

    - ``UCX_NET_DEVICES``: the RDMA ``device:port`` of each fabric netdev; netdev names only where the fabric has
      no RDMA device (to UCX a netdev name means TCP); ``mpi_ucx_net_devices`` when the inventory sets it.
    - ``NCCL_IB_HCA``: the same ports, exact-matched (``=``; else ``mlx5_1`` would also select ``mlx5_10``).
    - RoCE ports: ``UCX_IB_GID_INDEX``/``NCCL_IB_GID_INDEX`` from the one sysfs rule when every port agrees, and the
      policy's traffic class in ``UCX_IB_TRAFFIC_CLASS``/``NCCL_IB_TC`` (unset, NCCL sends in class 0: lossy).
    - ``NCCL_SOCKET_IFNAME``: the fabric netdevs, exact-matched; ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so that CUDA's
      device N is nvidia-smi's GPU N; ``UCX_TLS`` from ``mpi_ucx_tls``, which must keep the CUDA transports when
      the MPI is CUDA-aware (unset, UCX uses them all); ``mpi_env_extra`` last, as the site's own word.
    """
    env = {'CUDA_DEVICE_ORDER': 'PCI_BUS_ID'}
    netdevs = [iface['name'] for iface in interfaces if iface['name']]
    explicit = _setting(hostvars, host, 'mpi_ucx_net_devices')
    if explicit:
        env['UCX_NET_DEVICES'] = _csv(explicit)
    elif ports:
        env['UCX_NET_DEVICES'] = _csv('%s:%d' % (p['device'], p['port']) for p in ports)
    elif netdevs:
        env['UCX_NET_DEVICES'] = _csv(netdevs)
    if ports:
        env['NCCL_IB_HCA'] = '=' + _csv('%s:%d' % (p['device'], p['port']) for p in ports)
    if netdevs:
        env['NCCL_SOCKET_IFNAME'] = '=' + _csv(netdevs)

    roce = [p for p in ports if p['link_layer'] == 'Ethernet']
    if roce and policy is not None:
        env['UCX_IB_TRAFFIC_CLASS'] = env['NCCL_IB_TC'] = str(traffic_class(policy))
        indexes = set(p['gid_index'] for p in roce)
        if len(indexes) == 1 and None not in indexes:
            env['UCX_IB_GID_INDEX'] = env['NCCL_IB_GID_INDEX'] = str(indexes.pop())
        else:
            warnings.append('%s: its RoCE ports have no common RoCE v2 IPv4 GID index (%s): UCX_IB_GID_INDEX is '
                            'left to UCX and NCCL' % (host, ', '.join('%s:%d=%s' % (p['device'], p['port'], p['gid_index'])
                                                                      for p in roce)))

    tls = _setting(hostvars, host, 'mpi_ucx_tls')
    if tls:
        missing = [t for t in UCX_CUDA_TRANSPORTS if t not in tls]
        if _setting(hostvars, host, 'mpi_cuda') and 'all' not in tls and missing:
            problems.append('mpi_ucx_tls on %s: %s lacks %s; CUDA buffers would be staged through host memory or '
                            'fail' % (host, _csv(tls), ', '.join(missing)))
        env['UCX_TLS'] = _csv(tls)

    extra = _setting(hostvars, host, 'mpi_env_extra')
    if not isinstance(extra, dict):
        problems.append('mpi_env_extra on %s: must be a dictionary of environment variables, got %s'
                        % (host, type(extra).__name__))
        extra = {}
    for key, value in extra.items():
        if not _ENV_NAME_RE.fullmatch(str(key)):
            problems.append('mpi_env_extra on %s: %r is not an environment variable name' % (host, key))
        elif ';' in str(value) or not str(value).isprintable():
            problems.append('mpi_env_extra.%s on %s: the value may not hold a line break, control character or ";" '
                            '(mpirun passes the environment as one ";"-separated list): %r' % (key, host, value))
        else:
            env[key] = str(value)
    return env


def _policy(hostvars, hosts, problems):
    """The resolved RoCE policy per host (None where it cannot be resolved, with a problem naming the host)."""
    policies = {}
    for host in hosts:
        try:
            policies[host] = resolve_policy(_setting(hostvars, host, 'roce_qos_policy'))
        except PolicyError as exc:
            problems.extend('%s on %s' % (error, host) for error in exc.errors)
            policies[host] = None
    return policies


def _rails(hostvars, hosts, problems):
    """The cluster's rails: the first host's ``fabric_network_rails``; a host that sees other rails is a problem."""
    rails = _setting(hostvars, hosts[0], 'fabric_network_rails') if hosts else []
    if not isinstance(rails, list):
        problems.append('fabric_network_rails on %s: must be a list of {name, subnet}, got %s'
                        % (hosts[0], type(rails).__name__))
        return []
    for host in hosts[1:]:
        own = _setting(hostvars, host, 'fabric_network_rails')
        if own != rails:
            problems.append('fabric_network_rails on %s: differs from %s\'s; the rails are one list for the whole '
                            'cluster (set them for the group)' % (host, hosts[0]))
    return rails


def _launcher(hostvars, hosts, problems):
    """Who launches jobs and with which hostfile: one account for the whole cluster, the first node's hostfile."""
    if not hosts:
        return {'user': DEFAULTS['ssh_trust_user'], 'hostfile': DEFAULTS['mpi_hostfile_path']}
    user = _setting(hostvars, hosts[0], 'ssh_trust_user')
    for host in hosts[1:]:
        if _setting(hostvars, host, 'ssh_trust_user') != user:
            problems.append("ssh_trust_user on %s: differs from %s's; mpirun starts every rank as one account, the "
                            'same on every node (set it for the group)' % (host, hosts[0]))
    return {'user': user, 'hostfile': _setting(hostvars, hosts[0], 'mpi_hostfile_path')}


def build_model(hostvars, hosts, others=None):
    """Return the model of ``hosts`` (inventory names, in inventory order) from ``hostvars``.

    ``{hosts, problems, warnings, launcher: {user, hostfile}, hosts_entries, nodes: {host: {...}},
    hostfile: [{host, name, slots}], member_sources}``: the hostfile entries are named by each host's primary fabric name (slots None where unknown);
    ``member_sources`` are the rail subnets and every node's management address, where cluster members connect from;
    ``others`` the inventory's other hosts and their ``ansible_host``, whose names and addresses the fabric may not
    take (``check_plan``). With problems, ``nodes``,
    ``hosts_entries`` and ``hostfile`` are empty: nothing may be rendered from a plan that does not hold.
    """
    hosts = list(hosts)
    problems = []
    warnings = []
    rails = _rails(hostvars, hosts, problems)
    default_mtu = _setting(hostvars, hosts[0], 'fabric_network_mtu') if hosts else DEFAULTS['fabric_network_mtu']
    problems.extend(check_plan(hostvars, hosts, rails, default_mtu, others))
    policies = _policy(hostvars, hosts, problems)
    launcher = _launcher(hostvars, hosts, problems)
    if problems:
        return {'hosts': hosts, 'problems': problems, 'warnings': warnings, 'hosts_entries': [], 'nodes': {}, 'hostfile': [],
                'member_sources': [], 'launcher': launcher}

    aliases = host_aliases(hostvars, hosts, rails)
    nodes = {}
    for host in hosts:
        facts = _facts(hostvars, host)
        interfaces = _interfaces(hostvars, host, rails, _mac_names(facts))
        ports = _rdma_ports(interfaces, facts)
        slots, slots_from = _slots(hostvars, host, facts)
        rails_of_node = rail_bindings(interfaces, ports, facts)
        policy = policies[host]
        nodes[host] = {
            'interfaces': interfaces,
            'fabric_names': [name for iface in interfaces for name in iface['names']],
            'primary_name': interfaces[0]['names'][0] if interfaces else host,
            'known_hosts_names': aliases[host],
            'slots': slots,
            'slots_from': slots_from,
            'gpu_count': (facts.get('gpu_topology') or {}).get('gpu_count'),
            'rdma_ports': ports,
            'roce': {'traffic_class': traffic_class(policy), 'dscp': policy['roce']['dscp'],
                     'priority': policy['roce']['priority']},
            'roce_policy': policy,
            'job_env': job_environment(hostvars, host, interfaces, ports, policy, problems, warnings),
            'rails': rails_of_node,
            'ranks': rank_bindings(ports, facts, rails_of_node, slots if isinstance(slots, int) else None),
        }
    if problems:
        return {'hosts': hosts, 'problems': problems, 'warnings': warnings, 'hosts_entries': [], 'nodes': {}, 'hostfile': [],
                'member_sources': [], 'launcher': launcher}
    _warn_uneven_env(hosts, nodes, warnings)
    managed = (hostvars.get(h, {}).get('ansible_host') for h in hosts)
    sources = [str(rail.get('subnet')) for rail in rails] + [str(a) for a in managed if a]
    return {'hosts': hosts, 'problems': [], 'warnings': warnings, 'launcher': launcher,
            'hosts_entries': hosts_entries(hostvars, hosts, rails), 'nodes': nodes,
            'member_sources': list(dict.fromkeys(sources)),
            'hostfile': [{'host': h, 'name': nodes[h]['primary_name'], 'slots': nodes[h]['slots']} for h in hosts]}


def _warn_uneven_env(hosts, nodes, warnings):
    """mpirun hands its own node's job environment to every rank: say where nodes would want other values."""
    if not hosts:
        return
    first = nodes[hosts[0]]['job_env']
    uneven = {}
    for host in hosts[1:]:
        env = nodes[host]['job_env']
        for key in set(first) | set(env):
            if first.get(key) != env.get(key):
                uneven.setdefault(key, []).append(host)
    for key, others in sorted(uneven.items()):
        warnings.append('%s differs between %s and %d other node(s) (%s%s); mpirun exports the launching node\'s '
                        'value to every rank' % (key, hosts[0], len(others), ', '.join(others[:5]),
                                                 ', ...' if len(others) > 5 else ''))
