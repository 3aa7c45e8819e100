# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The rdma role's view of a host's RDMA stack: whose build each installed rdma-core package is, which ports of
``ansible_facts.ib`` are not Active, and the files that add the DOCA-OFED repository.

DOCA-OFED builds its own rdma-core and ships its packages under the distribution's names, so only the version
tells the two builds apart (``rdma_doca_version_pattern``). The role keeps one stack per host: these answers feed
its refusals and the move of the distribution's packages to DOCA's build.
"""
from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.package_repository import (
    apt_repository, repository_files)


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


# where the role writes DOCA-OFED's signing key and repository (and apt pin), per package manager
DOCA_FILES = dict((kind, repository_files('doca', kind)) for kind in ('apt', 'dnf'))
# dnf takes a package from the repository with the lowest priority number (default 99); apt's pin is
# package_repository's, above the distribution's 500: DOCA's packages share their names with the distribution's, and
# DOCA's build of every package its repository has wins, without downgrading anything installed.
DNF_PRIORITY = 10


def doca_repository(url, repo_kind):
    """The files, apt source and pin, or dnf repository that put the DOCA-OFED repository ``url`` on a host.

    NVIDIA publishes each DOCA release as a flat repository per OS and architecture
    (https://linux.mellanox.com/public/repo/doca/<release>/<os>/<arch>/): apt's source and pin are
    ``package_repository.apt_repository``'s for a flat repository.
    """
    if repo_kind not in DOCA_FILES:
        raise ValueError('repository kind must be one of %s, got %r' % (', '.join(DOCA_FILES), repo_kind))
    if not isinstance(url, str) or not url:
        raise ValueError('rdma_doca_repo_url must be a URL, got %r' % (url,))
    if repo_kind == 'apt':
        return apt_repository('doca', url)
    files = DOCA_FILES[repo_kind]
    return {'files': files,
            'dnf_repo': {'name': 'hpcfabric-doca', 'description': 'NVIDIA DOCA-OFED', 'baseurl': url, 'gpgcheck': True,
                         'gpgkey': 'file://' + files['key'], 'priority': DNF_PRIORITY}}
