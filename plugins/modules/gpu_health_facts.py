#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: gpu_health_facts
short_description: Read a node's GPU and link health - XIDs, ECC, row remapping, throttling, NVLink, PCIe links, dcgmi
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads what tells a failing GPU or link before a job runs, and returns it parsed; the
    C(hpcfabric.cluster.gpu_health_findings) filter turns the results of all nodes into findings with an action.
  - The XID lines of this boot's kernel log (C(journalctl -k -b --no-pager -o short-iso), else C(dmesg)).
  - With C(nvidia-smi) present, C(nvidia-smi -q -x) (uncorrectable ECC counts, row remapping pending or failed, pages
    pending retirement, clock event reasons) and C(nvidia-smi nvlink -s) (inactive NVLinks).
  - The PCIe link (current and maximum speed and width) of every NVIDIA GPU under O(devices_dir) (vendor C(0x10de),
    class C(0x0300xx) or C(0x0302xx)) and of the device of each of O(interfaces).
  - Saved text instead of the commands (support bundles, pasted tickets) in the forms people save, C(nvidia-smi -q -x)
    or C(nvidia-smi -q), C(dcgmi diag -j) or its table, C(lspci -vv) for the PCIe links. Terminal escapes of a paste
    are removed; lines of no known form give a warning naming them, and the rest is read. Text of none of the forms
    fails the module, listing the forms it takes.
  - With O(dcgmi_diag_level) set, C(dcgmi diag -r N -j).
  - A source that cannot be read is listed in C(health.unread) with the reason (a kernel log a container may not read,
    GPUs on the bus but no C(nvidia-smi)) - never passed as healthy. A node without NVIDIA GPUs and without
    C(nvidia-smi) has nothing to read there, and an interface without a PCI device (a veth, a bridge) has no link to
    judge; both are no error. The module changes nothing.
options:
  interfaces:
    description:
      - The fabric interfaces whose PCIe link is read - netdev names (C(/sys/class/net/IF/device)) or RDMA device names
        (C(/sys/class/infiniband/DEV/device)).
      - An interface that is neither fails the module, naming it; one without a C(device) link is listed in
        C(health.no_pci_device).
    type: list
    elements: str
    default: []
  dcgmi_diag_level:
    description:
      - Run C(dcgmi diag -r N -j) at this level (1 takes seconds, 2 about two minutes, 3 about fifteen, 4 longer).
      - A missing C(dcgmi) fails the module. Unset runs no diagnostic.
    type: int
    choices: [1, 2, 3, 4]
  sysfs_root:
    description:
      - Root of the sysfs tree for the interfaces' devices (C(<sysfs_root>/class/net), C(<sysfs_root>/class/infiniband)).
    type: path
    default: /sys
  devices_dir:
    description:
      - Directory of the PCI functions, searched for NVIDIA GPUs.
    type: path
    default: /sys/bus/pci/devices
  nvidia_smi_path:
    description:
      - Name or path of C(nvidia-smi).
    type: str
    default: nvidia-smi
  dcgmi_path:
    description:
      - Name or path of C(dcgmi).
    type: str
    default: dcgmi
  kernel_log_output:
    description:
      - Saved kernel log text to read instead of C(journalctl)/C(dmesg) (support bundles, offline analysis).
    type: str
  nvidia_smi_output:
    description:
      - Saved C(nvidia-smi -q -x) (XML) or C(nvidia-smi -q) (text, also a C(-d) selection such as C(-d ECC)) output to
        parse instead of running it.
      - The GPUs' PCIe links it shows (C(GPU Link Info)) are the GPU links when neither O(lspci_output) nor
        O(devices_dir) gives an NVIDIA GPU.
    type: str
  nvlink_output:
    description:
      - Saved C(nvidia-smi nvlink -s) text to parse instead of running it.
    type: str
  dcgmi_output:
    description:
      - Saved C(dcgmi diag -r N -j) (JSON) or C(dcgmi diag -r N) (the table) output to parse instead of running it.
      - "DCGM 3.x tables name the failing GPUs after the status (C(Fail - GPU: 0)), DCGM 4.x tables give each GPU a
        line (C(GPU0: Pass)); a C(Fail - All) names no GPU in particular."
    type: str
  lspci_output:
    description:
      - Saved C(lspci -vv) output (any of C(-D), C(-nn)) giving the PCIe links of the NVIDIA GPUs and of the Ethernet
        and InfiniBand controllers, instead of reading O(devices_dir); the links of O(interfaces) are still read from
        sysfs.
      - "A GPU or controller without C(LnkCap)/C(LnkSta) lines (C(lspci) without root prints C(Capabilities: <access
        denied>)) is listed in C(health.unread)."
    type: str
notes:
  - C(journalctl -k) needs the systemd-journal or adm group or root; C(dmesg) needs root where C(kernel.dmesg_restrict)
    is 1. The validation runs it as root.
  - A C(nvidia-smi) or C(dcgmi) that exits non-zero fails the module with its exit status and message, except
    C(dcgmi diag) whose JSON names failed tests (it exits non-zero then) - the results are read and the status returned.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode reads the same sources (a requested dcgmi diag runs too - it changes nothing).
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - name: NVIDIA XID catalog
    description: What each XID means and the action NVIDIA gives.
    link: https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
  - name: NVIDIA GPU memory error management
    description: Row remapping, its pending and failure states.
    link: https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html
  - name: Linux kernel sysfs ABI for PCI devices
    description: current_link_speed, max_link_speed, current_link_width, max_link_width.
    link: https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci
'''

EXAMPLES = r'''
- name: Read the GPU and link health of the fabric interfaces' node
  hpcfabric.cluster.gpu_health_facts:
    interfaces: [ens1f0np0, mlx5_1]
  register: health

- name: Judge every node
  ansible.builtin.assert:
    that: report.passed
    fail_msg: "{{ report.messages | join(' | ') }}"
  vars:
    report: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'health')))
                | hpcfabric.cluster.gpu_health_findings }}"
  run_once: true

- name: Read a support bundle
  hpcfabric.cluster.gpu_health_facts:
    kernel_log_output: "{{ lookup('ansible.builtin.file', '/var/tmp/bundle/dmesg.txt') }}"
    nvidia_smi_output: "{{ lookup('ansible.builtin.file', '/var/tmp/bundle/nvidia-smi-q-x.xml') }}"
    devices_dir: /var/tmp/bundle/sys/bus/pci/devices

- name: Read what a ticket pasted - nvidia-smi -q, the dcgmi diag table, lspci -vv
  hpcfabric.cluster.gpu_health_facts:
    kernel_log_output: ''
    nvidia_smi_output: "{{ lookup('ansible.builtin.file', '/var/tmp/ticket/nvidia-smi-q.txt') }}"
    dcgmi_output: "{{ lookup('ansible.builtin.file', '/var/tmp/ticket/dcgmi-diag-r3.txt') }}"
    lspci_output: "{{ lookup('ansible.builtin.file', '/var/tmp/ticket/lspci-vv.txt') }}"
'''

RETURN = r'''
health:
  description: What was read, parsed.
  returned: success
  type: dict
  contains:
    xids:
      description: "C({pci, xid, pid, name, text, line}) per XID line of this boot's kernel log."
      type: list
      elements: dict
      sample: [{pci: "0000:3b:00.0", xid: 79, pid: null, name: null, text: "GPU has fallen off the bus", line: 812}]
    kernel_log_source:
      description: The command or parameter the kernel log came from; null when it could not be read.
      type: str
      sample: journalctl -k -b
    gpus:
      description: "Per GPU of C(nvidia-smi -q -x): C({index, pci, uuid, product, ecc_mode, ecc_uncorrectable: {volatile,
        aggregate}, remapped_rows: {pending, failure, uncorrectable} | null, retired_pages: {pending, double_bit} | null,
        clock_reasons: {reason: active}})."
      type: list
      elements: dict
    nvlink:
      description: "Per GPU of C(nvidia-smi nvlink -s): C({gpu, product, uuid, links: {n: active|inactive}, rates})."
      type: list
      elements: dict
    pcie:
      description: "Per GPU and interface device: C({kind: gpu|nic, device, pci, current_speed, max_speed, current_width,
        max_width}), texts as sysfs gives them (saved C(lspci -vv) or C(nvidia-smi) text is rewritten so)."
      type: list
      elements: dict
      sample: [{kind: nic, device: "ens1f0np0 (0000:0c:00.0)", pci: "0000:0c:00.0", current_speed: "16.0 GT/s PCIe",
                max_speed: "32.0 GT/s PCIe", current_width: "16", max_width: "16"}]
    no_pci_device:
      description: The interfaces without a PCI device (virtual interfaces), whose link is not judged.
      type: list
      elements: str
    dcgm:
      description: "C(dcgmi diag): C({level, rc, version, results: [{category, test, gpus, status, message}]}); null when
        not asked for."
      type: dict
    unread:
      description: "C({source, why}) per source that could not be read: its health is unknown."
      type: list
      elements: dict
      sample: [{source: kernel log, why: "journalctl -k -b printed no kernel line; dmesg exited 1: Operation not permitted"}]
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpcfabric.cluster.plugins.module_utils import dcgmi_table, gpu_health, lspci_links, nvidia_smi_text
from ansible_collections.hpcfabric.cluster.plugins.module_utils import pasted_text
from ansible_collections.hpcfabric.cluster.plugins.module_utils.nvidia_driver import read_pci_functions

GPU_CLASSES = ('0x0300', '0x0302')


def _command(module, argv, what):
    """stdout of a command that must succeed; fails the module naming it otherwise."""
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg='%s exited %d: %s' % (' '.join(argv), rc, (err or out).strip()[:500]), rc=rc,
                         command=argv, what=what)
    return out


def _parse(module, parser, text, source):
    try:
        return parser(text)
    except ValueError as exc:
        module.fail_json(msg='cannot parse %s: %s' % (source, exc), first_line=(text.strip().splitlines() or [''])[0])


def _read_saved(module, reader, name):
    """Saved text of the parameter ``name`` read by ``reader`` (which tells its forms apart); a warning per line of no
    known form. Text of no form fails the module with the reader's message, which lists the forms."""
    text = module.params[name]
    try:
        read = reader(text)
    except ValueError as exc:
        module.fail_json(msg='cannot parse %s: %s' % (name, exc), first_line=(text.strip().splitlines() or [''])[0])
    for warning in pasted_text.skipped_lines(name, read['unreadable']):
        module.warn(warning)
    return read


def kernel_log(module):
    """(text, source) of this boot's kernel log, or (None, why) when neither journalctl nor dmesg gives it."""
    if module.params['kernel_log_output'] is not None:
        return module.params['kernel_log_output'], 'kernel_log_output'
    tried = []
    journalctl = module.get_bin_path('journalctl')
    if journalctl:
        rc, out, err = module.run_command([journalctl, '-k', '-b', '--no-pager', '-o', 'short-iso'])
        # a journal without this boot's kernel messages (a container's own journal) prints "-- No entries --"
        lines = [line for line in out.splitlines() if line.strip() and not line.startswith('-- ')]
        if rc == 0 and lines:
            return out, 'journalctl -k -b'
        tried.append('journalctl -k -b %s' % ('exited %d: %s' % (rc, (err or out).strip()[:200]) if rc
                                              else 'printed no kernel line'))
    else:
        tried.append('no journalctl')
    dmesg = module.get_bin_path('dmesg')
    if dmesg:
        rc, out, err = module.run_command([dmesg])
        if rc == 0 and out.strip():
            return out, 'dmesg'
        tried.append('dmesg %s' % ('exited %d: %s' % (rc, (err or out).strip()[:200]) if rc else 'printed nothing'))
    else:
        tried.append('no dmesg')
    return None, '; '.join(tried)


def gpu_links(module):
    """The PCIe links of the NVIDIA GPUs on the bus; [] without the devices directory (no PCI bus: a container)."""
    devices_dir = module.params['devices_dir']
    if not os.path.isdir(devices_dir):
        return []
    try:
        functions = read_pci_functions(devices_dir)
    except ValueError as exc:
        module.fail_json(msg=str(exc), devices_dir=devices_dir)
    links = []
    for function in functions:
        if function['class'][:6] in GPU_CLASSES:
            link = gpu_health.read_pcie_link(os.path.join(devices_dir, function['slot']))
            link.update(kind='gpu', device='GPU %s' % gpu_health.pci_address(function['slot']))
            links.append(link)
    return links


def interface_links(module):
    """The PCIe links of the interfaces' devices, and the interfaces that have none."""
    root = module.params['sysfs_root'].rstrip('/')
    links, virtual = [], []
    for name in module.params['interfaces']:
        base = next((d for d in ('%s/class/net/%s' % (root, name), '%s/class/infiniband/%s' % (root, name))
                     if os.path.isdir(d)), None)
        if base is None:
            module.fail_json(msg='%s: neither a netdev under %s/class/net nor an RDMA device under %s/class/infiniband'
                             % (name, root, root), interface=name)
        if not os.path.isdir(os.path.join(base, 'device')):
            virtual.append(name)
            continue
        link = gpu_health.read_pcie_link(os.path.join(base, 'device'))
        link.update(kind='nic', device='%s (%s)' % (name, link['pci']))
        links.append(link)
    return links, virtual


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type='list', elements='str', default=[]),
            dcgmi_diag_level=dict(type='int', choices=[1, 2, 3, 4]),
            sysfs_root=dict(type='path', default='/sys'),
            devices_dir=dict(type='path', default='/sys/bus/pci/devices'),
            nvidia_smi_path=dict(type='str', default='nvidia-smi'),
            dcgmi_path=dict(type='str', default='dcgmi'),
            kernel_log_output=dict(type='str'),
            nvidia_smi_output=dict(type='str'),
            nvlink_output=dict(type='str'),
            dcgmi_output=dict(type='str'),
            lspci_output=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    health = {'xids': [], 'kernel_log_source': None, 'gpus': [], 'nvlink': [], 'pcie': [], 'no_pci_device': [],
              'dcgm': None, 'unread': []}

    text, source = kernel_log(module)
    if text is None:
        health['unread'].append({'source': 'kernel log', 'why': source})
    else:
        health['xids'], health['kernel_log_source'] = gpu_health.parse_xids(text), source

    nic_lspci = []
    if params['lspci_output'] is not None:
        lspci = _read_saved(module, lspci_links.read_lspci, 'lspci_output')
        gpu_pcie = [link for link in lspci['links'] if link['kind'] == 'gpu']
        nic_lspci = [link for link in lspci['links'] if link['kind'] == 'nic']
        health['unread'] += lspci['unread']
    else:
        gpu_pcie = gpu_links(module)
    smi = None
    if params['nvidia_smi_output'] is None or params['nvlink_output'] is None:
        smi = module.get_bin_path(params['nvidia_smi_path'])
    if params['nvidia_smi_output'] is not None:
        saved = _read_saved(module, nvidia_smi_text.read_nvidia_smi, 'nvidia_smi_output')
        health['gpus'] = saved['gpus']
        # a support bundle's nvidia-smi is all that may show the GPUs' links: the controller's sysfs has other devices
        gpu_pcie = gpu_pcie or saved['links']
    elif smi:
        health['gpus'] = _parse(module, gpu_health.parse_nvidia_smi_xml,
                                _command(module, [smi, '-q', '-x'], 'GPU health'), '%s -q -x' % smi)
    elif gpu_pcie:
        health['unread'].append({'source': 'nvidia-smi', 'why': '%d NVIDIA GPUs on the PCI bus but no %s' % (
            len(gpu_pcie), params['nvidia_smi_path'])})
    if params['nvlink_output'] is not None:
        health['nvlink'] = gpu_health.parse_nvlink_status(params['nvlink_output'])
    elif smi and health['gpus']:
        health['nvlink'] = gpu_health.parse_nvlink_status(_command(module, [smi, 'nvlink', '-s'], 'NVLink status'))

    nic_pcie, health['no_pci_device'] = interface_links(module)
    health['pcie'] = gpu_pcie + nic_lspci + nic_pcie

    level = params['dcgmi_diag_level']
    if params['dcgmi_output'] is not None:
        saved = _read_saved(module, dcgmi_table.read_dcgmi_diag, 'dcgmi_output')
        health['dcgm'] = dict(level=level, rc=None, version=saved['version'], results=saved['results'])
    elif level is not None:
        dcgmi = module.get_bin_path(params['dcgmi_path'])
        if not dcgmi:
            module.fail_json(msg='dcgmi_diag_level is %d but %s is not installed (DCGM, package datacenter-gpu-manager)'
                             % (level, params['dcgmi_path']))
        argv = [dcgmi, 'diag', '-r', str(level), '-j']
        rc, out, err = module.run_command(argv)
        try:
            parsed = gpu_health.parse_dcgmi_diag(out)
        except ValueError as exc:
            module.fail_json(msg='%s exited %d without diagnostic results (%s): %s' % (
                ' '.join(argv), rc, exc, (err or out).strip()[:500]), rc=rc)
        health['dcgm'] = dict(level=level, rc=rc, **parsed)

    module.exit_json(changed=False, health=health)


if __name__ == '__main__':
    main()
