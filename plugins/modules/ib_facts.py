#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: ib_facts
short_description: Gather InfiniBand and RoCE adapter facts from sysfs or ibstat
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads the RDMA devices under C(/sys/class/infiniband), or parses the output of C(ibstat), and sets
    C(ansible_facts.ib), that is every channel adapter with its ports (state, physical state, rate, link layer,
    LIDs, port GUID, netdev, RoCE v2 IPv4 GID index) plus summaries that validation asserts on.
  - Both sources give the same values; sysfs also gives the netdev and the RoCE v2 GID index, which
    C(ibstat) does not print, so sysfs is preferred.
  - The RoCE v2 GID index is the lowest index whose C(gid_attrs/types) entry reads C(RoCE v2) and whose GID
    is an IPv4-mapped address. It is read, never assumed to be 3.
  - Output that is only partly readable (for example C(ibstat) ending in C(ibpanic) after some CAs)
    yields the facts that are there and a warning naming each unreadable line.
options:
  source:
    description:
      - Where to read the devices from.
      - C(auto) reads sysfs when I(sysfs_root) holds RDMA devices and runs C(ibstat) otherwise.
      - C(sysfs) fails when I(sysfs_root) holds no RDMA device; C(ibstat) always runs I(ibstat_path).
    type: str
    choices: [auto, sysfs, ibstat]
    default: auto
  sysfs_root:
    description:
      - Root of the sysfs tree; devices are read from C(<sysfs_root>/class/infiniband).
      - A directory that itself holds the devices (such as C(/sys/class/infiniband)) is accepted too.
      - Point it at a copied or fake tree to read facts offline.
    type: path
    default: /sys
  output:
    description:
      - Saved C(ibstat) output to parse instead of reading the host (support bundles, offline analysis).
      - When set, nothing is run and sysfs is not read; it cannot be combined with I(source=sysfs).
      - Terminal escapes of a pasted copy (C(ESC[1m), the caret text C(^[[1m), a bare C([1m)) are removed first.
      - The shorter forms of the tool give what they hold plus a warning naming the form and what is missing
        (no failure) - C(ibstat -s) the CAs without ports, C(ibstat -l) the CA names only (I(ca_names), devices
        with null fields and no ports), C(ibstat -p) port GUIDs only, which name no CA (no devices; the warning
        lists the GUIDs).
    type: str
  ibstat_path:
    description:
      - Name or path of the C(ibstat) command (package infiniband-diags).
    type: str
    default: ibstat
notes:
  - C(ibstat) lists CAs in plain string order (C(mlx5_10) before C(mlx5_2)); I(ca_names) keeps that order for both sources.
  - Reading sysfs needs no privileges and no C(ib_umad) module; C(ibstat) needs C(ib_umad) loaded.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
seealso:
  - name: Linux kernel sysfs ABI for InfiniBand devices
    description: The files this module reads under C(/sys/class/infiniband).
    link: https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband
'''

EXAMPLES = r'''
- name: Gather RDMA adapter facts
  hpcfabric.cluster.ib_facts:

- name: Every fabric port must be Active at 400 Gb/s
  ansible.builtin.assert:
    that:
      - ansible_facts.ib.active_ports == 8
      - ansible_facts.ib.min_active_rate_gbps >= 400
    fail_msg: >-
      {{ ansible_facts.ib.active_ports }} Active ports, slowest
      {{ ansible_facts.ib.min_active_rate_gbps }} Gb/s

- name: Use the RoCE v2 GID index the NIC actually has
  ansible.builtin.debug:
    msg: "NCCL_IB_GID_INDEX={{ ansible_facts.ib.devices.mlx5_0.ports['1'].roce_v2_gid_index }}"

- name: Parse ibstat output saved in a support bundle
  hpcfabric.cluster.ib_facts:
    output: "{{ lookup('ansible.builtin.file', 'bundle/ibstat.txt') }}"

- name: Force ibstat from a non-standard location
  hpcfabric.cluster.ib_facts:
    source: ibstat
    ibstat_path: /opt/mellanox/bin/ibstat
'''

RETURN = r'''
ansible_facts:
  description: Facts set by the module.
  returned: success
  type: dict
  contains:
    ib:
      description: RDMA adapters and their summaries.
      returned: success
      type: dict
      contains:
        source:
          description: Where the facts came from, C(sysfs) or C(ibstat).
          type: str
          returned: success
          sample: sysfs
        ca_names:
          description: CA names in plain string order, as ibstat lists them.
          type: list
          elements: str
          returned: success
          sample: [mlx5_0, mlx5_1, mlx5_10, mlx5_2]
        active_ports:
          description: Number of ports whose state is C(Active), over all CAs.
          type: int
          returned: success
          sample: 8
        min_active_rate_gbps:
          description:
            - Lowest rate in Gb/s among Active ports (an int, or a float such as 2.5).
            - Null when no Active port reports a rate.
          type: raw
          returned: success
          sample: 400
        link_layers:
          description: Distinct link layers of all ports, sorted.
          type: list
          elements: str
          returned: success
          sample: [Ethernet, InfiniBand]
        devices:
          description: One entry per CA, keyed by CA name. Values that the source does not give are null.
          type: dict
          returned: success
          contains:
            node_type:
              description: Node type, C(CA) for host adapters.
              type: str
              sample: CA
            ca_type:
              description: Device model as ibstat prints it (C(MT) + PCI device id).
              type: str
              sample: MT4129
            num_ports:
              description: Number of ports (null for the C(CA 'x') single-port ibstat form).
              type: int
              sample: 1
            firmware_version:
              description: Firmware version.
              type: str
              sample: 28.39.1002
            hardware_version:
              description: Hardware revision.
              type: str
              sample: "0"
            node_guid:
              description: Node GUID, C(0x) and 16 hex digits.
              type: str
              sample: "0x946dae0300cde72c"
            system_image_guid:
              description: System image GUID, C(0x) and 16 hex digits.
              type: str
              sample: "0x946dae0300cde72c"
            ports:
              description: Ports keyed by port number as a string (C("1")).
              type: dict
              contains:
                state:
                  description: Logical port state as ibstat prints it (C(Down), C(Initializing), C(Armed), C(Active)).
                  type: str
                  sample: Active
                physical_state:
                  description: Physical port state as ibstat prints it (C(Polling), C(Disabled), C(LinkUp), ...).
                  type: str
                  sample: LinkUp
                rate_gbps:
                  description: Link rate in Gb/s; an int, or a float for 1X SDR (2.5).
                  type: raw
                  sample: 400
                link_layer:
                  description: C(InfiniBand) or C(Ethernet) (RoCE).
                  type: str
                  sample: InfiniBand
                base_lid:
                  description: Base LID (0 on Ethernet).
                  type: int
                  sample: 75
                sm_lid:
                  description: LID of the subnet manager (0 on Ethernet).
                  type: int
                  sample: 334
                lmc:
                  description: LID mask count.
                  type: int
                  sample: 0
                port_guid:
                  description: Port GUID, C(0x) and 16 hex digits.
                  type: str
                  sample: "0x946dae0300cde72c"
                netdev:
                  description: Network interface of the port (RoCE netdev or IPoIB interface); null from ibstat.
                  type: str
                  sample: ens1f0np0
                roce_v2_gid_index:
                  description:
                    - Lowest GID index of type RoCE v2 holding an IPv4-mapped address; null when there is
                      none (InfiniBand ports, no IPv4 address) and always null from ibstat.
                  type: int
                  sample: 3
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import class_dir, device_names, read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import IbstatParseError, parse_ibstat, summarize


def from_ibstat(module, sysfs_dir):
    ibstat = module.get_bin_path(module.params['ibstat_path'])
    if ibstat is None:
        module.fail_json(
            msg="%s not found (searched PATH and the sbin directories) and no RDMA device under %s: "
                "install infiniband-diags or load the adapter driver (mlx5_ib)" % (module.params['ibstat_path'], sysfs_dir),
            sysfs_path=sysfs_dir)
    rc, out, err = module.run_command([ibstat])
    if not out.strip():
        module.fail_json(msg='%s printed nothing (rc %d): %s' % (ibstat, rc, err.strip() or 'no RDMA device'),
                         rc=rc, stderr=err)
    devices, warnings = parse_ibstat(out)
    if rc != 0:
        warnings.append('%s exited with rc %d after listing %s: %s' % (ibstat, rc, ', '.join(sorted(devices)), err.strip()))
    return summarize(devices, 'ibstat'), warnings


def gather(module):
    params = module.params
    if params['output'] is not None:
        if params['source'] == 'sysfs':
            module.fail_json(msg='output holds ibstat text; it cannot be combined with source=sysfs')
        devices, warnings = parse_ibstat(params['output'])
        return summarize(devices, 'ibstat'), warnings
    sysfs_dir = class_dir(params['sysfs_root'])
    has_devices = bool(device_names(sysfs_dir))
    if params['source'] == 'sysfs' and not has_devices:
        module.fail_json(msg='no RDMA device under %s' % sysfs_dir, sysfs_path=sysfs_dir)
    if params['source'] == 'ibstat' or not has_devices:
        return from_ibstat(module, sysfs_dir)
    devices, warnings = read_devices(sysfs_dir)
    return summarize(devices, 'sysfs'), warnings


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type='str', default='auto', choices=['auto', 'sysfs', 'ibstat']),
            sysfs_root=dict(type='path', default='/sys'),
            output=dict(type='str'),
            ibstat_path=dict(type='str', default='ibstat'),
        ),
        supports_check_mode=True,
    )
    try:
        facts, warnings = gather(module)
    except IbstatParseError as exc:
        module.fail_json(msg='cannot parse ibstat output: %s' % exc, line=exc.line, lineno=exc.lineno)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={'ib': facts})


if __name__ == '__main__':
    main()
