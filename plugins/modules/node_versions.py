#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: node_versions
short_description: Read the driver, CUDA, RDMA stack, package, NIC firmware and GPU VBIOS versions of a node
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads the versions that the validation's drift check compares across the nodes and that Ansible's facts do not
    hold (the kernel is C(ansible_facts.kernel), Open MPI and UCX are C(ansible_facts.mpi) of
    M(hpcfabric.cluster.mpi_facts)).
  - C(nvidia_driver) from C(/sys/module/nvidia/version), else C(/proc/driver/nvidia/version) (the loaded module,
    proprietary or open); C(cuda) from
    C(<cuda_home>/version.json), or C(version.txt) before CUDA 11.1; C(ofed) from C(ofed_info -s) (MLNX_OFED or
    DOCA-OFED); C(package:<name>) for each package of O(packages) from C(dpkg-query), else C(rpm); C(nic_firmware:<dev>)
    from each RDMA device's C(fw_ver) in sysfs; C(gpu_vbios:<index>) from
    C(nvidia-smi --query-gpu=index,vbios_version --format=csv,noheader).
  - What a node does not have is null, not an error - no driver loaded, no CUDA toolkit, no C(ofed_info), a package
    that is not installed. A tool that is there but fails (C(nvidia-smi) exit 9 when the driver is not loaded) gives a
    warning and no versions from it. The module changes nothing.
options:
  packages:
    description:
      - Packages whose installed version is read, each as the component C(package:<name>); null when it is not
        installed. Names of both Debian and EL packages may be listed; those a node does not know are null there.
    type: list
    elements: str
    default: [rdma-core, ibverbs-providers, libibverbs1, libibverbs, doca-ofed, mlnx-ofed-kernel-utils]
  cuda_home:
    description:
      - The CUDA toolkit's directory. Unset means C(/usr/local/cuda), except with saved text (see O(ofed_info_output)),
        where unset reads no toolkit.
    type: path
  sysfs_root:
    description:
      - Root of the sysfs tree whose C(class/infiniband/*/fw_ver) gives the NIC firmware. Unset means C(/sys), except
        with saved text, where unset reads no firmware. Point it at a copied tree to read a support bundle.
    type: path
  nvidia_version_path:
    description:
      - The NVIDIA driver's version file, read when O(nvidia_module_version_path) is empty or missing.
    type: path
    default: /proc/driver/nvidia/version
  nvidia_module_version_path:
    description:
      - The loaded nvidia module's version, read first (the rule the C(hpcfabric.cluster.nvidia_driver) role uses too).
    type: path
    default: /sys/module/nvidia/version
  nvidia_smi_path:
    description:
      - Name or path of C(nvidia-smi), for the VBIOS versions.
    type: str
    default: nvidia-smi
  ofed_info_path:
    description:
      - Name or path of C(ofed_info).
    type: str
    default: ofed_info
  nvidia_version_output:
    description:
      - Saved text of C(/proc/driver/nvidia/version).
      - When this or any other C(*_output) option is given, the module runs no command and reads no file but the
        saved texts, O(cuda_home) and O(sysfs_root) when they are set.
    type: str
  ofed_info_output:
    description:
      - Saved output of C(ofed_info -s).
    type: str
  vbios_output:
    description:
      - Saved output of C(nvidia-smi --query-gpu=index,vbios_version --format=csv) (with or without the header).
    type: str
  packages_output:
    description:
      - Saved output of C(dpkg-query -W -f '${Package}\t${db:Status-Abbrev}\t${Version}\n' NAMES...) or of
        C(rpm -q --queryformat '%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\n' NAMES...); three tab-separated
        fields on a line mean dpkg-query. Only the packages of O(packages) are read from it.
    type: str
notes:
  - Nothing here needs privileges.
  - Terminal escapes of pasted text are removed first; a saved text with no version fails, naming the source and its
    first line; unreadable lines of the VBIOS list give a warning naming them.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode reads the same.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: hpcfabric.cluster.mpi_facts
  - plugin: hpcfabric.cluster.version_drift
    plugin_type: filter
'''

EXAMPLES = r'''
- name: Read this node's versions
  hpcfabric.cluster.node_versions:
    packages: [rdma-core, ibverbs-providers, doca-ofed]
  register: node_versions

- name: Read the versions of a support bundle
  hpcfabric.cluster.node_versions:
    sysfs_root: /var/tmp/bundle/sys
    nvidia_version_output: "{{ lookup('ansible.builtin.file', '/var/tmp/bundle/nvidia-version.txt') }}"
    ofed_info_output: "{{ lookup('ansible.builtin.file', '/var/tmp/bundle/ofed_info-s.txt') }}"
    vbios_output: "{{ lookup('ansible.builtin.file', '/var/tmp/bundle/vbios.csv') }}"
'''

RETURN = r'''
versions:
  description: Component to version, null where the node has none or it could not be read.
  returned: success
  type: dict
  sample:
    nvidia_driver: "565.57.01"
    cuda: "12.4.1"
    ofed: "OFED-internal-24.07-0.3.5.0.110"
    "package:rdma-core": "2407mlnx52-1.2407036"
    "package:libibverbs": null
    "nic_firmware:mlx5_0": "28.42.1000"
    "gpu_vbios:0": "96.00.74.00.10"
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpcfabric.cluster.plugins.module_utils import node_versions, pasted_text
from ansible_collections.hpcfabric.cluster.plugins.module_utils.bench_env import cuda_toolkit_version
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import class_dir, read_devices

SAVED = ('nvidia_version_output', 'ofed_info_output', 'vbios_output', 'packages_output')


def _read_file(path):
    try:
        with open(path, 'r', errors='replace') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _parse(module, parser, text, source):
    try:
        return parser(text)
    except node_versions.VersionParseError as exc:
        module.fail_json(msg='cannot parse %s: %s%s' % (source, exc, ': %r' % exc.line if exc.line else ''),
                         line=exc.line, lineno=exc.lineno)


def _run(module, path, args, what):
    """stdout of a tool, None when it is not installed or fails (with a warning: it is there but did not answer)."""
    binary = module.get_bin_path(path)
    if binary is None:
        return None
    rc, out, err = module.run_command([binary] + args)
    if rc != 0:
        module.warn('%s %s exited %d: %s; no %s' % (binary, ' '.join(args), rc, (err or out).strip()[:200], what))
        return None
    return out


def _driver(module, saved):
    if saved:
        text, source = module.params['nvidia_version_output'], 'nvidia_version_output'
        return _parse(module, node_versions.nvidia_driver, text, source) if text else None
    paths = (module.params['nvidia_module_version_path'], module.params['nvidia_version_path'])
    return _parse(module, lambda texts: node_versions.loaded_nvidia_driver(*texts),
                  [_read_file(path) for path in paths], ' or '.join(paths))


def _cuda(module, saved):
    home = module.params['cuda_home'] or (None if saved else '/usr/local/cuda')
    if not home:
        return None
    try:
        return cuda_toolkit_version(_read_file(os.path.join(home, 'version.json')),
                                    _read_file(os.path.join(home, 'version.txt')))
    except ValueError as exc:
        module.warn('CUDA toolkit in %s: %s; no CUDA version' % (home, exc))
        return None


def _ofed(module, saved):
    if saved:
        text, source = module.params['ofed_info_output'], 'ofed_info_output'
    else:
        text, source = _run(module, module.params['ofed_info_path'], ['-s'], 'OFED version'), 'ofed_info -s'
    return _parse(module, node_versions.ofed_version, text, source) if text else None


def _vbios(module, saved):
    if saved:
        text, source = module.params['vbios_output'], 'vbios_output'
    else:
        text = _run(module, module.params['nvidia_smi_path'],
                    ['--query-gpu=index,vbios_version', '--format=csv,noheader'], 'VBIOS versions')
        source = 'nvidia-smi --query-gpu=index,vbios_version'
    if not text or not text.strip():
        return {}
    versions, unreadable = _parse(module, node_versions.vbios_versions, text, source)
    for warning in pasted_text.skipped_lines(source, unreadable):
        module.warn(warning)
    return versions


def _packages(module, saved):
    names = module.params['packages']
    if not names:
        return {}
    if saved:
        text = pasted_text.clean(module.params['packages_output'] or '')
        dpkg = any(len(line.split('\t')) == 3 for line in text.splitlines())
        return (node_versions.dpkg_versions if dpkg else node_versions.rpm_versions)(text, names)
    dpkg_query = module.get_bin_path('dpkg-query')
    if dpkg_query:
        # exit 1 only says that some names are unknown to dpkg: those are not installed
        rc, out, err = module.run_command([dpkg_query, '-W', '-f', node_versions.DPKG_FORMAT] + names)
        if rc in (0, 1):
            return node_versions.dpkg_versions(out, names)
        module.warn('%s -W exited %d: %s; no package versions' % (dpkg_query, rc, err.strip()[:200]))
        return dict((name, None) for name in names)
    rpm = module.get_bin_path('rpm')
    if rpm:
        # rpm -q exits with the number of packages that are not installed
        dummy, out, dummy_err = module.run_command([rpm, '-q', '--queryformat', node_versions.RPM_FORMAT] + names)
        return node_versions.rpm_versions(out, names)
    module.warn('neither dpkg-query nor rpm found: no package versions')
    return dict((name, None) for name in names)


def _firmware(module, saved):
    root = module.params['sysfs_root'] or (None if saved else '/sys')
    if not root:
        return {}
    devices, dummy = read_devices(class_dir(root))
    return dict((name, device['firmware_version']) for name, device in devices.items())


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type='list', elements='str',
                          default=['rdma-core', 'ibverbs-providers', 'libibverbs1', 'libibverbs', 'doca-ofed',
                                   'mlnx-ofed-kernel-utils']),
            cuda_home=dict(type='path'),
            sysfs_root=dict(type='path'),
            nvidia_version_path=dict(type='path', default='/proc/driver/nvidia/version'),
            nvidia_module_version_path=dict(type='path', default='/sys/module/nvidia/version'),
            nvidia_smi_path=dict(type='str', default='nvidia-smi'),
            ofed_info_path=dict(type='str', default='ofed_info'),
            nvidia_version_output=dict(type='str'),
            ofed_info_output=dict(type='str'),
            vbios_output=dict(type='str'),
            packages_output=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    saved = any(module.params[name] is not None for name in SAVED)
    versions = node_versions.components(
        driver=_driver(module, saved), cuda=_cuda(module, saved), ofed=_ofed(module, saved),
        packages=_packages(module, saved), firmware=_firmware(module, saved), vbios=_vbios(module, saved))
    module.exit_json(changed=False, versions=versions)


if __name__ == '__main__':
    main()
