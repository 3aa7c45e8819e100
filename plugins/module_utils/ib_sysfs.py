# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Read RDMA devices from a ``/sys/class/infiniband`` tree into the ``ansible_facts.ib`` device structure.

Only reads files under the root it is given, so tests point it at a fake tree. Values are normalised to
what ``ibstat`` prints (state "Active", physical state "LinkUp", rate 200 or 2.5, GUIDs "0x" + 16 hex digits).
"""

from __future__ import annotations

import os
import re

try:
    from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import (
        new_device,
        new_port,
        parse_rate,
        phys_state_name,
        state_name,
    )
except ImportError:  # the boot-time copy of the roce_qos role, beside ibstat.py
    from ibstat import (
        new_device,
        new_port,
        parse_rate,
        phys_state_name,
        state_name,
    )

_CODED_RE = re.compile(r'^\s*(\d+):\s*(.*?)\s*$')
_IPV4_MAPPED_RE = re.compile(r'^0000:0000:0000:0000:0000:ffff:[0-9a-f]{4}:[0-9a-f]{4}$', re.IGNORECASE)
_ROCE_V2 = 'RoCE v2'


def class_dir(sysfs_root):
    """Return the directory that holds the RDMA devices for ``sysfs_root``.

    ``sysfs_root`` is the sysfs mount point (``/sys``, devices in ``class/infiniband``); a path that itself
    holds devices (``/sys/class/infiniband``) is accepted too. When neither has devices the conventional
    ``<root>/class/infiniband`` path is returned, for messages.
    """
    nested = os.path.join(sysfs_root, 'class', 'infiniband')
    if os.path.isdir(nested) or not device_names(sysfs_root):
        return nested
    return sysfs_root


def device_names(directory):
    """Names of the RDMA devices in ``directory`` (entries with a ``ports`` subdirectory), in string order."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return []
    return sorted(name for name in entries if os.path.isdir(os.path.join(directory, name, 'ports')))


def read_devices(directory):
    """Read every device in ``directory`` into ``(devices, warnings)``.

    Files that are missing or unreadable (sysfs answers EINVAL for empty GID slots) become None.
    """
    devices = {}
    warnings = []
    for name in device_names(directory):
        devices[name] = _read_device(os.path.join(directory, name))
        if not devices[name]['ports']:
            warnings.append('%s: no readable port under %s' % (name, os.path.join(directory, name, 'ports')))
    return devices, warnings


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _numbered(directory):
    """Entries of ``directory`` named by a number, as ints in ascending order."""
    try:
        return sorted(int(name) for name in os.listdir(directory) if name.isdigit())
    except OSError:
        return []


def _guid(text):
    """'b859:9f03:00d4:4e5a' (sysfs) -> '0xb8599f0300d44e5a' (ibstat)."""
    digits = (text or '').replace(':', '').lower()
    return '0x' + digits if re.match(r'^[0-9a-f]{16}$', digits) else None


def _coded(text, namer):
    """'4: ACTIVE' -> namer(4, 'ACTIVE')."""
    match = _CODED_RE.match(text or '')
    if not match:
        return text or None
    return namer(int(match.group(1)), match.group(2))


def _number(text):
    try:
        return int(text, 0)
    except (TypeError, ValueError):
        return None


def _read_device(path):
    device = new_device(_coded(_read(os.path.join(path, 'node_type')), lambda code, word: word) or 'CA')
    device['ca_type'] = _read(os.path.join(path, 'hca_type'))
    device['firmware_version'] = _read(os.path.join(path, 'fw_ver'))
    device['hardware_version'] = _read(os.path.join(path, 'hw_rev'))
    device['node_guid'] = _guid(_read(os.path.join(path, 'node_guid')))
    device['system_image_guid'] = _guid(_read(os.path.join(path, 'sys_image_guid')))
    ports_dir = os.path.join(path, 'ports')
    for number in _numbered(ports_dir):
        device['ports'][str(number)] = _read_port(os.path.join(ports_dir, str(number)), path, number)
    device['num_ports'] = len(device['ports'])
    return device


def _read_port(path, device_path, number):
    port = new_port()
    port['state'] = _coded(_read(os.path.join(path, 'state')), state_name)
    port['physical_state'] = _coded(_read(os.path.join(path, 'phys_state')), phys_state_name)
    port['rate_gbps'] = parse_rate(_read(os.path.join(path, 'rate')))
    port['link_layer'] = _read(os.path.join(path, 'link_layer'))
    port['base_lid'] = _number(_read(os.path.join(path, 'lid')))
    port['sm_lid'] = _number(_read(os.path.join(path, 'sm_lid')))
    port['lmc'] = _number(_read(os.path.join(path, 'lid_mask_count')))
    gids = _gid_table(path)
    port['port_guid'] = _port_guid(gids.get(0))
    port['netdev'] = _gid_netdev(path, gids) or _pci_netdev(device_path, number)
    port['roce_v2_gid_index'] = roce_v2_gid_index(path, port['netdev'])
    return port


def _gid_table(port_path):
    gids_dir = os.path.join(port_path, 'gids')
    table = {}
    for index in _numbered(gids_dir):
        gid = _read(os.path.join(gids_dir, str(index)))
        if gid:
            table[index] = gid.lower()
    return table


def _port_guid(gid):
    """The port GUID is the interface identifier (low 64 bits) of GID 0, which is what ibstat prints."""
    if not gid:
        return None
    return _guid(':'.join(gid.split(':')[4:]))


def roce_v2_gid_index(port_path, netdev):
    """The one GID-index rule: the lowest index whose type is RoCE v2, whose GID is IPv4-mapped (::ffff:a.b.c.d)
    and which sits on the port's own netdev ``netdev``; None when there is none. Never assumed (not 3).

    A GID on another netdev (a VXLAN or macvlan on top of the port) carries another address than the fabric's. An
    entry whose netdev cannot be read is taken as the port's (older kernels have no ``ndevs``); empty slots cannot be
    read at all (EINVAL) and are skipped.
    """
    for index in _numbered(os.path.join(port_path, 'gids')):
        gid = _read(os.path.join(port_path, 'gids', str(index))) or ''
        if not _IPV4_MAPPED_RE.match(gid):
            continue
        if _read(os.path.join(port_path, 'gid_attrs', 'types', str(index))) != _ROCE_V2:
            continue
        ndev = _read(os.path.join(port_path, 'gid_attrs', 'ndevs', str(index)))
        if ndev is None or netdev is None or ndev == netdev:
            return index
    return None


def _gid_netdev(port_path, gids):
    """Netdev of the lowest populated GID that names one (RoCE); IB GIDs have none."""
    for index in sorted(gids):
        netdev = _read(os.path.join(port_path, 'gid_attrs', 'ndevs', str(index)))
        if netdev:
            return netdev
    return None


def _pci_netdev(device_path, port_number):
    """Netdev from the PCI function (IPoIB, or RoCE without GID attributes).

    One PCI function may carry several ports' netdevs (ConnectX-3): ``dev_port`` tells them apart.
    """
    net_dir = os.path.join(device_path, 'device', 'net')
    try:
        names = sorted(os.listdir(net_dir))
    except OSError:
        return None
    if len(names) == 1:
        return names[0]
    for name in names:
        if _number(_read(os.path.join(net_dir, name, 'dev_port'))) == port_number - 1:
            return name
    return None
