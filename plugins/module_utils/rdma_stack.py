# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The rdma role's view of a host's RDMA stack: whose build each installed rdma-core package is, and which ports
of ``ansible_facts.ib`` are not Active.

DOCA-OFED builds its own rdma-core and ships its packages under the distribution's names, so only the version
tells the two builds apart (``rdma_doca_version_pattern``). The role keeps one stack per host: these answers feed
its refusals and the move of the distribution's packages to DOCA's build.
"""
from __future__ import annotations

import re


def installed_core_packages(installed, core_names, doca_version_pattern):
    """The installed rdma-core packages, each as ``{name, version, label, doca}``.

    ``installed`` is ``ansible_facts.packages`` (name -> list of ``{version, ...}``, one per installed version or
    architecture); ``core_names`` the binary packages built from rdma-core, in the order the result keeps;
    ``doca`` is true where the version matches ``doca_version_pattern`` from its start (DOCA's build). ``label``
    is ``"<name> <version>"``, for messages.
    """
    if not isinstance(installed, dict):
        raise TypeError('installed packages must be a mapping (ansible_facts.packages), got %s'
                        % type(installed).__name__)
    try:
        doca = re.compile(doca_version_pattern)
    except (re.error, TypeError) as exc:
        raise ValueError('rdma_doca_version_pattern %r is not a regular expression: %s'
                         % (doca_version_pattern, exc)) from exc
    found = []
    for name in core_names:
        for package in installed.get(name) or []:
            version = str(package.get('version', ''))
            found.append({'name': name, 'version': version, 'label': '%s %s' % (name, version),
                          'doca': doca.match(version) is not None})
    return found


def _port_order(port):
    """Ports in number order (sysfs and ibstat name them "1", "2", ...), anything else after them by name."""
    return (0, int(port), '') if str(port).isdigit() else (1, 0, str(port))


def inactive_ports(ib):
    """One line per port of ``ansible_facts.ib`` that is not Active: ``"<device> port <n> is <state> (physical
    state <physical state>)"``, devices in string order (as ``ca_names``), ports in number order.
    """
    if not isinstance(ib, dict) or not isinstance(ib.get('devices'), dict):
        raise TypeError('expected ansible_facts.ib, a mapping with devices (hpcfabric.cluster.ib_facts)')
    lines = []
    for device in sorted(ib['devices']):
        ports = ib['devices'][device].get('ports') or {}
        for port in sorted(ports, key=_port_order):
            state = ports[port]
            if state.get('state') != 'Active':
                lines.append('%s port %s is %s (physical state %s)'
                             % (device, port, state.get('state'), state.get('physical_state')))
    return lines
