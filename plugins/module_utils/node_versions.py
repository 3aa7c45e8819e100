# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The versions a node runs that Ansible's facts do not hold (the node_versions module), as pure parsers.

Component names, as the drift check compares them:

- ``nvidia_driver``: the loaded kernel module's version, from ``/proc/driver/nvidia/version``;
- ``cuda``: the toolkit's version from ``<cuda_home>/version.json`` (``version.txt`` before CUDA 11.1);
- ``ofed``: ``ofed_info -s`` without its trailing colon (``MLNX_OFED_LINUX-23.07-0.5.1.2``,
  ``OFED-internal-24.07-0.3.5.0.110`` for DOCA-OFED);
- ``package:<name>``: the installed version of a package, from dpkg-query or rpm;
- ``nic_firmware:<device>``: each RDMA device's ``fw_ver`` (``nic_firmware:mlx5_0``);
- ``gpu_vbios:<index>``: each GPU's VBIOS from ``nvidia-smi --query-gpu=index,vbios_version``.

Firmware and VBIOS are per device, not one value per node: a node whose rail-3 HCA alone runs old firmware is named
with that HCA, and a management NIC of another model beside the fabric HCAs is not mistaken for drift.
"""
from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils import pasted_text

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  ..." (proprietary) or
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build ..." (open modules)
_NVRM_RE = re.compile(r'^NVRM version:.*?Kernel Module(?:\s+for\s+\S+)?\s+([0-9]+(?:\.[0-9]+)+)\s')
_OFED_RE = re.compile(r'^([A-Za-z][A-Za-z0-9_.+-]*-[0-9][A-Za-z0-9_.+-]*):?$')
_VBIOS_RE = re.compile(r'^\s*([0-9]+)\s*,\s*(\S.*?)\s*$')
_NOT_AVAILABLE = ('[N/A]', 'N/A', '[Not Supported]', '[Unknown Error]')
# dpkg-query's format, so that an installed package can be told from one removed with its configuration kept; both
# tools expand the \\t and \\n escapes themselves
DPKG_FORMAT = r'${Package}\t${db:Status-Abbrev}\t${Version}\n'
RPM_FORMAT = r'%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\n'


class VersionParseError(ValueError):
    """Text that holds no version, with the line that says so."""

    def __init__(self, message, line=None, lineno=None):
        super().__init__(message)
        self.line = line
        self.lineno = lineno


def nvidia_driver(text):
    """The driver version of ``/proc/driver/nvidia/version``; VersionParseError when its first line has none."""
    lines = [line for line in pasted_text.clean(text).splitlines() if line.strip()]
    if not lines:
        raise VersionParseError('empty')
    found = _NVRM_RE.match(lines[0].strip() + ' ')
    if not found:
        raise VersionParseError('no "NVRM version: ... Kernel Module <version>" line', lines[0], 1)
    return found.group(1)


def loaded_nvidia_driver(module_version, proc_version):
    """The version of the loaded nvidia kernel module: ``/sys/module/nvidia/version`` (``module_version``, one line,
    there since the 3xx drivers), else the NVRM line of ``/proc/driver/nvidia/version`` (``proc_version``); None when
    both are empty, as they are with no module loaded. VersionParseError when the text there holds no version."""
    first = (pasted_text.clean(module_version or '').strip().splitlines() or [''])[0].strip()
    if first:
        if not re.fullmatch(r'[0-9]+(?:\.[0-9]+)+', first):
            raise VersionParseError('not a driver version', first, 1)
        return first
    return nvidia_driver(proc_version) if (proc_version or '').strip() else None


def ofed_version(text):
    """The version line of ``ofed_info -s``, without its trailing colon; VersionParseError when there is none."""
    lines = [line.strip() for line in pasted_text.clean(text).splitlines() if line.strip()]
    if not lines:
        raise VersionParseError('empty')
    found = _OFED_RE.match(lines[0])
    if not found:
        raise VersionParseError('not a "<name>-<version>:" line', lines[0], 1)
    return found.group(1)


def vbios_versions(text):
    """``({index: vbios or None}, unreadable)`` from ``nvidia-smi --query-gpu=index,vbios_version --format=csv``
    (header or not); ``unreadable`` lists ``(lineno, line)`` of the lines that are neither. A VBIOS the driver does
    not give (``[N/A]``) is None. VersionParseError when no line has a GPU."""
    versions, unreadable = {}, []
    for lineno, line in enumerate(pasted_text.clean(text).splitlines(), 1):
        if not line.strip() or line.replace(' ', '').lower() == 'index,vbios_version':
            continue
        found = _VBIOS_RE.match(line)
        if not found or ',' in found.group(2):
            unreadable.append((lineno, line))
            continue
        value = found.group(2)
        versions[found.group(1)] = None if value in _NOT_AVAILABLE else value
    if not versions:
        first = unreadable[0] if unreadable else (None, None)
        raise VersionParseError('no "<index>, <vbios_version>" line', first[1], first[0])
    return versions, unreadable


def dpkg_versions(text, names):
    """``{name: version or None}`` for ``names`` from ``dpkg-query -W -f DPKG_FORMAT names`` (packages it does not
    know are missing from its output). Installed means status ``ii`` (or ``hi``, held); a package with several
    architectures installed gives its versions joined with ``, `` when they differ."""
    found = {}
    for line in text.splitlines():
        fields = line.split('\t')
        if len(fields) != 3 or fields[0] not in names:
            continue
        status = fields[1].strip()
        if len(status) >= 2 and status[1] == 'i' and fields[2].strip():
            found.setdefault(fields[0], set()).add(fields[2].strip())
    return _joined(found, names)


def rpm_versions(text, names):
    """``{name: version or None}`` for ``names`` from ``rpm -q --queryformat RPM_FORMAT names`` (a package that is
    not installed prints ``package NAME is not installed``)."""
    found = {}
    for line in text.splitlines():
        fields = line.split('\t')
        if len(fields) == 2 and fields[0] in names and fields[1].strip():
            found.setdefault(fields[0], set()).add(fields[1].strip())
    return _joined(found, names)


def _joined(found, names):
    # the sort that drift uses for versions is not needed here: the joined text only has to be the same on every node
    return dict((name, ', '.join(sorted(found[name])) if name in found else None) for name in names)


def components(driver=None, cuda=None, ofed=None, packages=None, firmware=None, vbios=None):
    """The component dict: the single values under their names, ``packages`` as ``package:<name>``, ``firmware``
    (``{device: fw_ver}``) as ``nic_firmware:<device>``, ``vbios`` (``{index: version}``) as ``gpu_vbios:<index>``."""
    result = {'nvidia_driver': driver, 'cuda': cuda, 'ofed': ofed}
    result.update(('package:%s' % name, version) for name, version in (packages or {}).items())
    result.update(('nic_firmware:%s' % device, version) for device, version in (firmware or {}).items())
    result.update(('gpu_vbios:%s' % index, version) for index, version in (vbios or {}).items())
    return result
