# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validation's preflight: what a node lacks before any job runs (GPUs, hostfile slots, RDMA ports, RoCE v2 GID,
MTU, CUDA-aware MPI, UCX cuda transports, GPUDirect RDMA, the MPI tools the launcher runs), from the facts of the
collection's facts modules and the setup module's interface facts; and every node's problems as one list.

Bad input raises :class:`ValueError` naming what is wrong; the filter plugins turn it into an AnsibleFilterError.
"""

from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_info import CUDA_TRANSPORTS as UCX_CUDA_TRANSPORTS
from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_local_fact import launch_tools_differ
# the nvidia_driver role's rule for DMA-BUF (open modules, kernel 5.12 or later): the node passes where it set it up
from ansible_collections.hpcfabric.cluster.plugins.module_utils.nvidia_driver import DMABUF_MIN_KERNEL, dmabuf_capable
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.units import number, whole

# nv_peer_mem is the module's name before it moved into the NVIDIA driver as nvidia-peermem
PEERMEM_MODULES = ('nvidia_peermem', 'nv_peer_mem')
DMABUF_MIN_UCX = (1, 14)
_UP_STATES = ('up', 'unknown')


def interface_states(facts, names):
    """``{name: {mtu, operstate}}`` of the named interfaces, from the setup module's network facts.

    Setup keys an interface's facts by its name with ``-`` turned into ``_``; an interface it does not report has
    ``mtu`` and ``operstate`` None, and ``operstate`` is None too when setup gives no ``active`` flag.
    """
    if not isinstance(facts, dict):
        raise ValueError('facts must be the host\'s ansible_facts, got %s' % type(facts).__name__)
    if not isinstance(names, (list, tuple)):
        raise ValueError('interface names must be a list, got %s' % type(names).__name__)
    states = {}
    for name in names:
        seen = facts.get(str(name).replace('-', '_'))
        seen = seen if isinstance(seen, dict) else {}
        active = seen.get('active')
        states[name] = {'mtu': seen.get('mtu'), 'operstate': None if active is None else ('up' if active else 'down')}
    return states


def _version_tuple(text, parts):
    match = re.match(r'\s*(\d+)' + r'\.(\d+)' * (parts - 1), text or '')
    return tuple(int(group) for group in match.groups()) if match else None


def _check_gpus(facts, expect):
    topology = facts.get('gpu_topology')
    if not isinstance(topology, dict):
        return ['GPU topology facts missing (gpu_topology_facts did not run or failed)']
    seen = topology.get('gpu_count') or 0
    wanted = expect.get('gpu_count')
    if wanted is None:
        return [] if seen >= 1 else ['GPU count: expected at least 1, seen %d' % seen]
    wanted = whole(wanted, 'expected GPU count')
    return [] if seen == wanted else ['GPU count: expected %d, seen %d' % (wanted, seen)]


def _check_slots(facts, expect):
    """One rank per GPU: a hostfile with other slots than GPUs starts too few ranks or puts two on one GPU."""
    slots = expect.get('slots')
    topology = facts.get('gpu_topology')
    if slots is None or not isinstance(topology, dict) or topology.get('gpu_count') is None:
        return []
    slots = whole(slots, 'hostfile slots')
    seen = topology['gpu_count']
    if slots == seen:
        return []
    return ['hostfile slots: %d, but the node has %d GPUs (one rank per GPU: set mpi_hostfile_slots to %d or leave it '
            'unset)' % (slots, seen, seen)]


def _rate_text(rate):
    return '%g' % rate


def _check_port(name, port_number, port, expect, source):
    label = '%s port %s' % (name, port_number)
    problems = []
    if port.get('state') != 'Active':
        problems.append('%s: state %s, expected Active' % (label, port.get('state') or 'unknown'))
    wanted_rate = expect.get('port_rate_gbps')
    if wanted_rate is not None and port.get('state') == 'Active':
        wanted_rate = float(number(wanted_rate, 'expected port rate'))
        rate = port.get('rate_gbps')
        if rate is None:
            problems.append('%s: rate unknown, expected %s' % (label, _rate_text(wanted_rate)))
        elif float(rate) != wanted_rate:
            problems.append('%s: rate %s Gb/s, expected %s' % (label, _rate_text(float(rate)), _rate_text(wanted_rate)))
    wanted_layer = expect.get('link_layer')
    if wanted_layer and port.get('link_layer') != wanted_layer:
        problems.append('%s: link layer %s, expected %s' % (label, port.get('link_layer') or 'unknown', wanted_layer))
    if port.get('link_layer') == 'Ethernet' and port.get('roce_v2_gid_index') is None:
        if source == 'ibstat':
            problems.append('%s: RoCE v2 GID unknown (ib facts from ibstat, which shows no GIDs; sysfs is needed)' % label)
        else:
            problems.append('%s: no RoCE v2 GID (no IPv4 address on %s?)' % (label, port.get('netdev') or 'its netdev'))
    return problems


def _check_rdma(facts, expect):
    ib = facts.get('ib')
    if not isinstance(ib, dict):
        return ['ib facts missing (ib_facts did not run)']
    devices = ib.get('devices') or {}
    if not devices:
        return ['RDMA: no RDMA device (ib facts list no CA)']
    problems = []
    for name in sorted(devices):
        ports = devices[name].get('ports') or {}
        if not ports:
            problems.append('%s: no port' % name)
        for port_number in sorted(ports, key=lambda key: int(key) if str(key).isdigit() else 0):
            problems.extend(_check_port(name, port_number, ports[port_number], expect, ib.get('source')))
    return problems


def _check_interfaces(facts, expect):
    wanted = expect.get('interfaces') or []
    if not wanted:
        return []
    interfaces = facts.get('interfaces')
    if not isinstance(interfaces, dict):
        return ['interface facts missing']
    # one MTU for every interface, or one per interface name (the cluster model's)
    mtus = expect.get('mtu')
    if not isinstance(mtus, dict):
        mtus = dict.fromkeys(wanted, mtus)
    problems = []
    for name in wanted:
        mtu = mtus.get(name)
        mtu = None if mtu is None else whole(mtu, 'expected MTU of %s' % name)
        seen = interfaces.get(name) or {}
        if seen.get('mtu') is None and seen.get('operstate') is None:
            problems.append('%s: not present' % name)
            continue
        state = seen.get('operstate')
        if state is not None and str(state).lower() not in _UP_STATES:
            problems.append('%s: state %s, expected up' % (name, state))
        if mtu is not None and seen.get('mtu') != mtu:
            problems.append('%s: MTU %s, expected %d' % (name, seen.get('mtu'), mtu))
    return problems


def _check_ucx(ucx):
    transports = list(ucx.get('transports') or [])
    if not ucx.get('version') and not transports:
        return ['UCX: not found (no ucx_info output), expected UCX with cuda transports (%s)'
                % ', '.join(UCX_CUDA_TRANSPORTS)]
    missing = [name for name in UCX_CUDA_TRANSPORTS if name not in transports]
    if missing:
        return ['UCX: no cuda transports (%s) in [%s]' % (', '.join(missing), ', '.join(transports))]
    return []


def _check_mpi(facts):
    mpi = facts.get('mpi')
    if not isinstance(mpi, dict):
        return ['mpi facts missing (mpi_facts did not run)']
    problems = []
    if mpi.get('cuda_aware') is False:
        problems.append('MPI: not CUDA-aware (mpi_built_with_cuda_support false)')
    elif mpi.get('cuda_aware') is None:
        problems.append('MPI: CUDA support unknown (no mpi_built_with_cuda_support in ompi_info), expected CUDA-aware')
    return problems + _check_ucx(mpi.get('ucx') or {})


def _check_gpudirect(facts):
    modules = facts.get('modules') or []
    if any(name in modules for name in PEERMEM_MODULES):
        return []
    kernel = facts.get('kernel')
    nvidia_open = facts.get('nvidia_open')
    if dmabuf_capable(nvidia_open, kernel):
        ucx = (facts.get('mpi') or {}).get('ucx') or {}
        ucx_version = _version_tuple(ucx.get('version'), 2)
        if ucx_version is not None and ucx_version < DMABUF_MIN_UCX:
            return ['GPUDirect RDMA: DMA-BUF needs UCX ≥ %d.%d, seen UCX %s (or load nvidia_peermem)'
                    % (DMABUF_MIN_UCX + (ucx.get('version'),))]
        return []
    flavour = {True: 'open kernel modules', False: 'proprietary kernel modules'}.get(nvidia_open, 'NVIDIA module flavour unknown')
    return ['GPUDirect RDMA: neither nvidia_peermem loaded nor DMA-BUF (open kernel modules and kernel ≥ %d.%d); '
            'seen %s, kernel %s' % (DMABUF_MIN_KERNEL + (flavour, kernel or 'unknown'))]


def _check_mpi_install(facts, expect):
    """The node's MPI tools were found (the mpi role's local fact) and are where the launcher's are."""
    tools = facts.get('mpi_tools')
    if tools is None:
        return []
    if not isinstance(tools, dict):
        raise ValueError('preflight: mpi_tools must be the mpi_launch_tools result, got %s' % type(tools).__name__)
    return list(tools.get('problems') or []) + launch_tools_differ(tools, expect.get('launcher_mpi_tools'),
                                                                   expect.get('launcher'))


def preflight_problems(facts, expect):
    """What a node lacks for the validation, one line per problem naming the device, expected and seen."""
    if not isinstance(facts, dict):
        raise ValueError('preflight facts must be a dict, got %s' % type(facts).__name__)
    if not isinstance(expect, dict):
        raise ValueError('preflight expectations must be a dict, got %s' % type(expect).__name__)
    device = expect.get('device')
    if device not in ('cpu', 'cuda'):
        raise ValueError('preflight: expected device must be cpu or cuda, got %r' % (device,))
    rdma = expect.get('rdma', False)
    if not isinstance(rdma, bool):
        raise ValueError('preflight: rdma must be true or false, got %r' % (rdma,))
    problems = []
    if device == 'cuda':
        problems.extend(_check_gpus(facts, expect))
        problems.extend(_check_slots(facts, expect))
    if rdma:
        problems.extend(_check_rdma(facts, expect))
    problems.extend(_check_interfaces(facts, expect))
    install_problems = _check_mpi_install(facts, expect)
    problems.extend(install_problems)
    if device == 'cuda' and not install_problems:
        problems.extend(_check_mpi(facts))
        if rdma:
            problems.extend(_check_gpudirect(facts))
    return problems


def host_problems(problems_by_host):
    """``['<host>: <problem>', ...]``: every host's problems in one list, host by host, for one verdict."""
    if not isinstance(problems_by_host, dict):
        raise ValueError('problems must map each host to its list of problems, got %s'
                         % type(problems_by_host).__name__)
    lines = []
    for host, problems in problems_by_host.items():
        if not isinstance(problems, (list, tuple)):
            raise ValueError('the problems of %s must be a list, got %s' % (host, type(problems).__name__))
        lines.extend('%s: %s' % (host, problem) for problem in problems)
    return lines
