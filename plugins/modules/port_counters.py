#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: port_counters
short_description: Read the counters of the fabric ports - netdev statistics, RDMA port counters, pause frames
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads, for each interface of O(interfaces), the netdev counters in C(/sys/class/net/IF/statistics/) and, when an
    RDMA port has that netdev, the port's C(counters/) and C(hw_counters/) under
    C(/sys/class/infiniband/DEV/ports/N/) (C(link_downed), C(symbol_error), C(port_xmit_discards),
    C(excessive_buffer_overrun_errors), C(out_of_buffer), C(np_cnp_sent), C(rp_cnp_handled), ...) and the flow
    control counters of C(ethtool -S IF) (names with C(pause), C(xon) or C(xoff) - per priority C(rx_prio3_pause),
    C(tx_prio3_pause) on mlx5, C(tx_priority_3_xoff.nic) on ice).
  - Two reads around a job give its counter deltas; the C(hpcfabric.cluster.port_counter_report) filter takes them and
    applies the fatal and warning rules. The module changes nothing.
  - The RDMA port of an interface is found the way M(hpcfabric.cluster.ib_facts) finds a port's netdev (its GID
    table, else the PCI function's C(net/) directory).
options:
  interfaces:
    description:
      - The fabric interfaces (netdev names) to read.
      - Each must have netdev statistics or an RDMA port; an interface with neither fails the module, naming it.
    type: list
    elements: str
    required: true
  sysfs_root:
    description:
      - Root of the sysfs tree; netdevs are read from C(<sysfs_root>/class/net), RDMA devices from
        C(<sysfs_root>/class/infiniband). Point it at a copied tree to read counters offline.
    type: path
    default: /sys
  ethtool:
    description:
      - Read the flow control counters with C(ethtool -S) for the interfaces that have an RDMA port.
      - A missing C(ethtool) or a failing C(ethtool -S) gives a warning and no flow control counters, not a failure.
    type: bool
    default: true
  ethtool_path:
    description:
      - Name or path of the C(ethtool) command.
    type: str
    default: ethtool
  ethtool_output:
    description:
      - Saved C(ethtool -S) text per interface, to parse instead of running C(ethtool) (support bundles, offline
        analysis). An interface given here is not run through C(ethtool), whatever O(ethtool) says.
      - Terminal escapes of a pasted copy are removed first; the C(NIC statistics:) header may be missing (a saved
        C(ethtool -S IF | grep prio)). Unreadable lines give a warning naming them; text without any counter line
        fails, naming the interface and the first line.
    type: dict
    default: {}
  counters_output:
    description:
      - Saved port counter text per interface, read in addition to sysfs; its counters replace the sysfs ones of the
        same name. The forms are C(perfquery) and C(perfquery -x) (C(SymbolErrorCounter), C(PortXmitData) ... become
        C(counters/symbol_error), C(counters/port_xmit_data) ..., the names of C(/sys/class/infiniband/DEV/ports/N/counters))
        and C(rdma statistic show), one line a link or C(-p) (its counters become C(hw_counters/NAME)). A file may hold
        several of them.
      - A text of several ports is narrowed to the interface's RDMA port; where the node's sysfs does not name that port
        the text must hold one port, and C(rdma statistic) then names it. An interface given here may lack sysfs
        counters (a support bundle without a copied tree).
      - Terminal escapes are removed first; unreadable lines give a warning naming them; text of none of the forms, or
        without the interface's port, fails, naming the interface.
    type: dict
    default: {}
notes:
  - Reading sysfs needs no privileges; C(ethtool -S) needs none on mlx5 either.
  - Counters that cannot be read (some C(hw_counters) on some firmware) are left out, so they have no delta.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode reads the same counters.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - name: Linux kernel sysfs ABI for InfiniBand devices
    description: The port counters under C(/sys/class/infiniband).
    link: https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband
  - name: mlx5 ethtool counters
    description: The names C(ethtool -S) prints on ConnectX adapters (C(rx_prioN_pause) and the like).
    link: https://docs.kernel.org/networking/device_drivers/ethernet/mellanox/mlx5/counters.html
'''

EXAMPLES = r'''
- name: Read the fabric ports' counters before the job
  hpcfabric.cluster.port_counters:
    interfaces: [ens1f0np0, ens2f0np0]
  register: before

- name: Read the counters of a support bundle's ethtool output
  hpcfabric.cluster.port_counters:
    interfaces: [ens1f0np0]
    sysfs_root: /var/tmp/bundle/sys
    ethtool_output:
      ens1f0np0: "{{ lookup('ansible.builtin.file', '/var/tmp/bundle/ethtool-S-ens1f0np0.txt') }}"

- name: Read the port counters a ticket pasted (perfquery -x of port 1, rdma statistic show)
  hpcfabric.cluster.port_counters:
    interfaces: [ib0]
    sysfs_root: /var/tmp/ticket/sys
    ethtool: false
    counters_output:
      ib0: "{{ lookup('ansible.builtin.file', '/var/tmp/ticket/perfquery-x.txt') }}"
'''

RETURN = r'''
counters:
  description: The read.
  returned: success
  type: dict
  contains:
    read_at:
      description: When the counters were read, seconds since the epoch on the node (deltas use the node's own clock).
      type: float
      returned: success
      sample: 1764000000.25
    ports:
      description: Per interface, its RDMA port (C(DEV:PORT), null without one) and its counters.
      type: dict
      returned: success
      sample:
        ens1f0np0:
          rdma_port: "mlx5_0:1"
          counters:
            statistics/rx_bytes: 2195783498134
            counters/link_downed: 0
            hw_counters/np_cnp_sent: 7
            ethtool/rx_prio3_pause: 0
'''

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpcfabric.cluster.plugins.module_utils import pasted_text, port_counter_text
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import class_dir, read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.port_counters import (
    EthtoolParseError,
    parse_ethtool_stats,
    read_port,
)


def rdma_ports_by_netdev(sysfs_dir):
    """``{netdev: 'DEV:PORT'}`` of the RDMA ports whose netdev is known."""
    devices, dummy = read_devices(sysfs_dir)
    return dict((port['netdev'], '%s:%s' % (name, number))
                for name, device in sorted(devices.items()) for number, port in sorted(device['ports'].items())
                if port['netdev'])


def ethtool_counters(module, interface, ethtool):
    """Flow control counters from saved text or from ethtool -S, and the warnings: what could not be read."""
    text = module.params['ethtool_output'].get(interface)
    source = 'ethtool_output.%s' % interface
    if text is None:
        if ethtool is None:
            return {}, ['%s not found: no flow control counters for %s' % (module.params['ethtool_path'], interface)]
        rc, text, err = module.run_command([ethtool, '-S', interface])
        if rc != 0:
            return {}, ['%s -S %s exited %d: %s' % (ethtool, interface, rc, (err or text).strip())]
        source = '%s -S %s' % (ethtool, interface)
    try:
        values, unreadable = parse_ethtool_stats(text)
    except EthtoolParseError as exc:
        module.fail_json(msg='cannot parse %s: %s' % (source, exc), line=exc.line, lineno=exc.lineno)
    return values, pasted_text.skipped_lines(source, unreadable)


def saved_counters(module, interface, rdma_port):
    """The counters of ``counters_output.<interface>`` and the RDMA port they are of; warnings per unreadable line."""
    source = 'counters_output.%s' % interface
    try:
        read = port_counter_text.read_port_counters(module.params['counters_output'][interface])
        values, rdma_port = port_counter_text.port_counters(read, rdma_port)
    except ValueError as exc:
        module.fail_json(msg='cannot parse %s: %s' % (source, exc), interface=interface)
    return values, rdma_port, pasted_text.skipped_lines(source, read['unreadable'])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type='list', elements='str', required=True),
            sysfs_root=dict(type='path', default='/sys'),
            ethtool=dict(type='bool', default=True),
            ethtool_path=dict(type='str', default='ethtool'),
            ethtool_output=dict(type='dict', default={}),
            counters_output=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    params = module.params
    net_dir = '%s/class/net' % params['sysfs_root'].rstrip('/')
    rdma_dir = class_dir(params['sysfs_root'])
    rdma_ports = rdma_ports_by_netdev(rdma_dir)
    ethtool = None
    if params['ethtool'] and any(interface in rdma_ports and interface not in params['ethtool_output']
                                 for interface in params['interfaces']):
        ethtool = module.get_bin_path(params['ethtool_path'])
    read_at = time.time()
    ports = {}
    for interface in params['interfaces']:
        port = read_port(net_dir, rdma_dir, interface, rdma_ports.get(interface))
        saved = interface in params['ethtool_output'] or interface in params['counters_output']
        if not port['counters'] and not saved:
            module.fail_json(msg='%s: no counters under %s/%s/statistics and no RDMA port with that netdev under %s' % (
                interface, net_dir, interface, rdma_dir), interface=interface)
        if interface in params['ethtool_output'] or (params['ethtool'] and port['rdma_port']):
            values, warnings = ethtool_counters(module, interface, ethtool)
            port['counters'].update(values)
            for warning in warnings:
                module.warn(warning)
        if interface in params['counters_output']:
            values, port['rdma_port'], warnings = saved_counters(module, interface, port['rdma_port'])
            port['counters'].update(values)
            for warning in warnings:
                module.warn(warning)
        ports[interface] = port
    module.exit_json(changed=False, counters={'read_at': read_at, 'ports': ports})


if __name__ == '__main__':
    main()
