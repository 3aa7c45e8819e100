#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: roce_host_qos
short_description: Apply and read back lossless RoCE QoS (PFC, ECN, DSCP) on a host's fabric NICs
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Finds which of the given interfaces are RoCE-capable (an RDMA device under C(/sys/class/net/IF/device/infiniband)
    whose port has the Ethernet link layer) and reads their RoCE v2 IPv4 GID index from
    C(/sys/class/infiniband/DEV/ports/P/gid_attrs/types).
  - Applies the resolved C(roce_qos_policy) with C(mlnx_qos) (mlnx-tools from DOCA) or the inbox C(dcb) (iproute2),
    that is DSCP trust, DSCP to priority map, PFC priorities, priority to traffic class map and ETS; sets the RDMA-CM default
    ToS and RoCE mode in configfs and enables ECN per priority where the driver exposes
    C(/sys/class/net/IF/ecn/roce_np) and C(roce_rp).
  - Reads everything back and fails naming host, device, interface and the difference, for example
    C(node01 mlx5_0/ens1f0np0 - PFC enabled on [3,4], policy [3]).
  - The logic lives in C(module_utils/roce_host.py), which the C(hpcfabric.cluster.roce_qos) role also installs on the
    node and runs from a systemd oneshot at boot.
options:
  mode:
    description:
      - C(detect) only reports the interfaces, the backend that would be used and the GID index.
      - C(apply) changes what differs from the policy (nothing in check mode) and reports each change.
      - C(verify) fails when a RoCE-capable interface differs from the policy (MTU included).
    type: str
    choices: [detect, apply, verify]
    default: verify
  interfaces:
    description:
      - The fabric network interfaces to consider. Interfaces that are missing or not RoCE-capable are reported and skipped.
    type: list
    elements: str
    required: true
  policy:
    description:
      - The lossless RoCE policy, as the C(roce_qos_policy) variable; missing keys take the collection defaults
        (RoCE DSCP 26 on priority 3 with PFC, CNP DSCP 48 on priority 6). See the C(roce_qos) role documentation.
      - An invalid policy fails before anything is read or changed, naming the offending key.
    type: dict
    default: {}
  backend:
    description:
      - Which tool configures the NIC. C(auto) uses C(mlnx_qos) when it is installed, else C(dcb).
    type: str
    choices: [auto, mlnx_qos, dcb]
    default: auto
  ecn:
    description:
      - Enable ECN (DCQCN notification and reaction point) on the RoCE priority and set the CNP DSCP and priority
        where the driver exposes C(/sys/class/net/IF/ecn/).
    type: bool
    default: true
  rdma_cm:
    description:
      - Set the RDMA-CM default ToS (DSCP << 2 | ECT) and RoCE mode (C(RoCE v2)) for each device port in configfs.
      - Needs the C(rdma_cm) kernel module and configfs mounted on O(configfs_root).
    type: bool
    default: true
  host:
    description:
      - Name used in messages; defaults to the short host name.
    type: str
  sysfs_root:
    description:
      - Root of the sysfs tree (tests and support bundles use a copy).
    type: path
    default: /sys
  configfs_root:
    description:
      - Where configfs is mounted.
    type: path
    default: /sys/kernel/config
  output:
    description:
      - Saved read-back text per interface instead of running any command, for support bundles and offline analysis
        (O(mode=verify) only). Each value is the output of C(mlnx_qos -i IF), or the outputs of
        C(dcb -N app show dev IF dscp-prio), C(dcb pfc show dev IF) and C(dcb ets show dev IF prio-tc tc-tsa tc-bw)
        joined. Sysfs and configfs are not read.
    type: dict
notes:
  - Supports check mode; C(apply) then reports the changes it would make.
  - Priority N is carried by traffic class N; the priority to traffic class map is set to 0..7.
  - The dcb backend relies on the driver switching to DSCP trust when the APP table holds DSCP entries (mlx5 does).
seealso:
  - name: dcb-pfc(8)
    description: The inbox DCB tool from iproute2.
    link: https://man7.org/linux/man-pages/man8/dcb-pfc.8.html
"""

EXAMPLES = r"""
- name: Apply the default lossless RoCE policy to the fabric NICs
  hpcfabric.cluster.roce_host_qos:
    mode: apply
    interfaces: [ens1f0np0, ens2f0np0]

- name: Fail when a NIC drifted from the policy
  hpcfabric.cluster.roce_host_qos:
    mode: verify
    interfaces: "{{ fabric_network_interfaces | map(attribute='name') | list }}"
    policy:
      roce: {dscp: 24, priority: 4}
      pfc: {priorities: [4]}
      ets: {bandwidth_percent: [50, 0, 0, 0, 50, 0, 0, 0]}

- name: Check a saved mlnx_qos report from a support bundle
  hpcfabric.cluster.roce_host_qos:
    mode: verify
    interfaces: [ens1f0np0]
    backend: mlnx_qos
    output:
      ens1f0np0: "{{ lookup('ansible.builtin.file', 'bundle/mlnx_qos-ens1f0np0.txt') }}"
"""

RETURN = r"""
host:
  description: The name used in messages.
  returned: always
  type: str
  sample: node01
backend:
  description: The tool that read and configured the NICs; null when none was needed or none is installed.
  returned: always
  type: str
  sample: mlnx_qos
traffic_class:
  description: The IP ToS byte of RoCE traffic (DSCP << 2 | ECT(0)), for C(NCCL_IB_TC) and C(UCX_IB_TRAFFIC_CLASS).
  returned: always
  type: int
  sample: 106
interfaces:
  description: What sysfs says about each requested interface.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Interface name.
      type: str
      sample: ens1f0np0
    present:
      description: Whether the interface exists.
      type: bool
    rdma_capable:
      description: Whether it has an RDMA device with an Ethernet (RoCE) port.
      type: bool
    ibdev:
      description: The RDMA device, or null.
      type: str
      sample: mlx5_0
    port:
      description: The RDMA device port of this netdev, or null.
      type: int
      sample: 1
    link_layer:
      description: The port's link layer (C(Ethernet) for RoCE), or null.
      type: str
    gid_index:
      description: Lowest GID index of type C(RoCE v2) with an IPv4-mapped address on this netdev, or null.
      type: int
      sample: 3
    mtu:
      description: The netdev MTU.
      type: int
      sample: 9000
    reason:
      description: Why the interface is not RoCE-capable, or null.
      type: str
      sample: no RDMA device (/sys/class/net/eth1/device/infiniband is missing)
    qos:
      description:
        - What the NIC holds, read back (mode=verify, RoCE-capable interfaces only) - C(trust), C(dscp2prio)
          (DSCP to the list of priorities it maps to) and C(pfc) (lossless priorities); null where a setting could not
          be read. The C(roce_qos) role publishes it as C(roce_qos_readback) for the cluster-wide comparison with the
          switches.
      type: dict
      sample: {"trust": "dscp", "dscp2prio": {"26": [3], "48": [6]}, "pfc": [3]}
capable_interfaces:
  description: Names of the RoCE-capable interfaces, in the requested order.
  returned: always
  type: list
  elements: str
  sample: [ens1f0np0, ens2f0np0]
roce_v2_gid_index:
  description: The RoCE v2 IPv4 GID index when every capable interface has the same one, else null.
  returned: always
  type: int
  sample: 3
changes:
  description: What differed from the policy and was (or in check mode would be) changed.
  returned: always
  type: list
  elements: str
  sample: ["node01 mlx5_0/ens1f0np0: traffic class 3 uses vendor, policy ets"]
differences:
  description: What the NICs report that differs from the policy (mode=verify).
  returned: always
  type: list
  elements: str
  sample: ["node01 mlx5_0/ens1f0np0: PFC enabled on [3,4], policy [3]"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_host import (
    HostError,
    RoceHost,
    traffic_class,
    verify_saved,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import PolicyError, resolve_policy


def run_module(module):
    params = module.params
    policy = resolve_policy(params['policy'])
    if params['output'] is not None:
        if params['mode'] != 'verify':
            module.fail_json(msg='output: saved read-back text can only be verified (mode=verify), not %s' % params['mode'])
        host = params['host'] or 'localhost'
        result = verify_saved(params['output'], policy, params['backend'], host)
        result.update(host=host, backend=None if params['backend'] == 'auto' else params['backend'],
                      traffic_class=traffic_class(policy), interfaces=[], capable_interfaces=[],
                      roce_v2_gid_index=None, changes=[], changed=False)
        return result
    roce = RoceHost(
        {'policy': policy, 'interfaces': params['interfaces'], 'backend': params['backend'],
         'ecn': params['ecn'], 'rdma_cm': params['rdma_cm']},
        run=module.run_command, which=module.get_bin_path,
        sysfs_root=params['sysfs_root'], configfs_root=params['configfs_root'], host=params['host'])
    if params['mode'] == 'detect':
        return roce.detect()
    if params['mode'] == 'apply':
        return roce.apply(check=module.check_mode)
    return roce.verify()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type='str', default='verify', choices=['detect', 'apply', 'verify']),
            interfaces=dict(type='list', elements='str', required=True),
            policy=dict(type='dict', default={}),
            backend=dict(type='str', default='auto', choices=['auto', 'mlnx_qos', 'dcb']),
            ecn=dict(type='bool', default=True),
            rdma_cm=dict(type='bool', default=True),
            host=dict(type='str'),
            sysfs_root=dict(type='path', default='/sys'),
            configfs_root=dict(type='path', default='/sys/kernel/config'),
            output=dict(type='dict'),
        ),
        supports_check_mode=True,
    )
    try:
        result = run_module(module)
    except (PolicyError, HostError) as exc:
        module.fail_json(msg=str(exc))
    for warning in result.pop('warnings'):
        module.warn(warning)
    if not result['capable_interfaces'] and module.params['output'] is None:
        checked = ', '.join('%s (%s)' % (nic['name'], nic['reason']) for nic in result['interfaces']) or 'none given'
        result['msg'] = 'no RoCE-capable NIC on %s; checked %s' % (result['host'], checked)
    if result['differences']:
        module.fail_json(msg='RoCE QoS differs from the policy: %s' % '; '.join(result['differences']), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
