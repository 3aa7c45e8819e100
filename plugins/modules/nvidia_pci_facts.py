#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_pci_facts module: the host's NVIDIA GPUs and NVSwitches, from sysfs."""
from __future__ import annotations

DOCUMENTATION = r'''
---
module: nvidia_pci_facts
short_description: List the host's NVIDIA GPUs and NVSwitches from the PCI devices in sysfs
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads C(vendor), C(class) and C(device) of every PCI function under O(devices_dir) and sets
    C(ansible_facts.nvidia_pci) with NVIDIA's (vendor C(0x10de)) GPUs (class C(0x0300xx) VGA or C(0x0302xx) 3D
    controller), NVSwitches (class C(0x0680xx)) and the GPUs older than Turing (PCI device id below C(0x1e00)), which
    the open kernel modules cannot drive and which no branch after R580 supports.
  - Tells a board with fourth-generation NVSwitches (NVLink 5 - DGX/HGX B200, B300, HGX B100), whose switches are not
    PCI devices of the host, by its GPUs (PCI device ids C(0x2901), C(0x2909), C(0x2920), C(0x29bc), C(0x3182)) or by
    the ConnectX bridge that manages them - a function of vendor C(0x15b3) whose C(vpd) holds C(SW_MNG), the value of
    the vendor-specific VPD field SMDL in NVIDIA's Fabric Manager user guide (release 2.3).
  - Needs no driver and no tool; entries without a readable vendor, class or device are passed over. sysfs lets only
    root read C(vpd); without privileges the bridges are not seen, and only the GPU ids tell the board.
options:
  devices_dir:
    description:
      - Directory of the PCI functions, one subdirectory (or link) per function named by its slot.
      - Point it at a copied or fake tree to read facts offline. A missing directory fails.
    type: path
    default: /sys/bus/pci/devices
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
    details: The module only reads.
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
seealso:
  - name: Linux kernel sysfs ABI for PCI devices
    description: The files this module reads under C(/sys/bus/pci/devices).
    link: https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci
'''

EXAMPLES = r'''
- name: List the NVIDIA GPUs and NVSwitches
  hpcfabric.cluster.nvidia_pci_facts:

- name: Every node has its 8 GPUs
  ansible.builtin.assert:
    that: ansible_facts['nvidia_pci']['gpu_count'] == 8
    fail_msg: "{{ inventory_hostname }}: GPUs at {{ ansible_facts['nvidia_pci']['gpus'] | map(attribute='slot') | join(', ') }}"

- name: Say why a node counts as a fourth-generation NVSwitch board
  ansible.builtin.debug:
    msg: "{{ ansible_facts['nvidia_pci']['nvswitch_gen4_evidence'] }}"
  when: ansible_facts['nvidia_pci']['nvswitch_gen4']
'''

RETURN = r'''
ansible_facts:
  description: Facts set by the module.
  returned: success
  type: dict
  contains:
    nvidia_pci:
      description: NVIDIA's GPUs and NVSwitches on the PCI bus.
      returned: success
      type: dict
      contains:
        gpus:
          description: C({slot, class, device}) per GPU function in slot order; class and device id in lower case.
          type: list
          elements: dict
          sample: [{slot: "0000:17:00.0", class: "0x030200", device: "0x2330"}]
        nvswitches:
          description: C({slot, class, device}) per NVSwitch function in slot order.
          type: list
          elements: dict
          sample: [{slot: "0000:3b:00.0", class: "0x068000", device: "0x22a3"}]
        pre_turing:
          description: C(<slot> (<device>)) of each GPU older than Turing.
          type: list
          elements: str
          sample: ["0000:17:00.0 (0x1db1)"]
        gpu_count:
          description: Number of GPUs.
          type: int
          sample: 8
        nvlink_bridges:
          description: C({slot, class, device}) per ConnectX function whose VPD marks it for NVLink management (C(SW_MNG)).
          type: list
          elements: dict
          sample: [{slot: "0000:05:00.1", class: "0x020700", device: "0x1021"}]
        nvswitch_gen4:
          description: Whether the board has fourth-generation NVSwitches (a GPU of such a board, or a bridge).
          type: bool
          sample: true
        nvswitch_gen4_evidence:
          description: What told the board, one line per GPU or bridge.
          type: list
          elements: str
          sample: ["0000:1b:00.0 GPU 0x3182 (B300 SXM6 AC)", "0000:05:00.1 NVLink management bridge 0x1021 (VPD SW_MNG)"]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpcfabric.cluster.plugins.module_utils.nvidia_driver import (
    classify_pci, read_nvlink_bridges, read_pci_functions)


def main():
    module = AnsibleModule(
        argument_spec=dict(devices_dir=dict(type='path', default='/sys/bus/pci/devices')),
        supports_check_mode=True,
    )
    devices_dir = module.params['devices_dir']
    try:
        facts = classify_pci(read_pci_functions(devices_dir), read_nvlink_bridges(devices_dir))
    except ValueError as exc:
        module.fail_json(msg=str(exc), devices_dir=devices_dir)
    module.exit_json(changed=False, ansible_facts={'nvidia_pci': facts})


if __name__ == '__main__':
    main()
