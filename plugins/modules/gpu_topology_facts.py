#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: gpu_topology_facts
short_description: Read the GPU/NIC topology matrix of an NVIDIA host
description:
  - Runs C(nvidia-smi topo -m), or parses saved text of it, and sets C(ansible_facts.gpu_topology) with the GPUs,
    the NICs, every link code of the matrix, each GPU's CPU and NUMA affinity and the NICs nearest to each GPU.
  - Understands current and old drivers, for example NICs printed as C(NIC0) with a C(NIC Legend) section or as
    C(mlx5_0) column headers, C(SOC) instead of C(SYS), a leading tab or none, the ANSI underline of the header
    (as escape bytes, as the caret text C(^[[4m) of a terminal copy, or as a bare C([4m)), empty cells from
    doubled tabs, copies whose tabs became spaces, and matrices realigned by hand with any mix of tabs and spaces
    (values are placed under the header they stand under, with tab stops of 8 columns).
  - A GPU's nearest NICs are the NICs whose link code to that GPU is the closest PCIe class present in its row,
    ranked C(PIX) < C(PXB) < C(PHB) < C(NODE) < C(SYS) (C(SOC) ranks as C(SYS)). All NICs at that best class are
    listed, in matrix order, and only when that class is better than C(SYS), because a NIC across the inter-socket
    link is not near. A NIC's nearest GPUs follow the same rule.
  - When the output is only partly readable (for example cut in the middle of the matrix) the module returns the
    facts that are there and a warning for each missing or incomplete row.
  - When O(nvml=true), C(nvidia-smi) ran, and the nvidia-ml-py library is installed, the NVML inventory (name,
    UUID, PCI bus id, memory, driver version of each GPU) is added under C(nvml). NVML is never required.
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
requirements:
  - C(nvidia-smi) from the NVIDIA driver, unless O(output) is given.
  - nvidia-ml-py (Python module C(pynvml)) for the optional NVML inventory.
options:
  output:
    description:
      - Saved text of C(nvidia-smi topo -m) to parse instead of running the command, for support bundles and
        offline analysis, as printed or as pasted (see the forms listed above).
      - When set, no command runs and no NVML inventory is collected, since it would describe the machine running
        the module rather than the one the text came from.
    type: str
  nvidia_smi_path:
    description:
      - Name or path of the C(nvidia-smi) binary, looked up on E(PATH) and the usual sbin directories.
    type: str
    default: nvidia-smi
  nvml:
    description:
      - Add the NVML inventory of each GPU under C(nvml) when the nvidia-ml-py library can be imported.
      - If the library is not installed, or O(output) is given, C(nvml) is null without a warning. If the library is
        installed but NVML cannot start or answer (for example no driver loaded) although C(nvidia-smi) ran,
        C(nvml) is null and the module warns.
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
    details: The module only reads; it runs C(nvidia-smi topo -m) in check mode as well.
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
notes:
  - A missing C(nvidia-smi) fails the module with a message naming it; so does a non-zero exit of C(nvidia-smi), for
    example exit code 9 when the driver is not loaded, quoting the first line it printed.
  - Text without a matrix header (a line starting with C(GPU0)) fails the module and names the first line.
seealso:
  - name: nvidia-smi documentation
    description: The C(topo) sub-command and its legend.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
'''

EXAMPLES = r'''
- name: Read the topology of a GPU node
  hpcfabric.cluster.gpu_topology_facts:

- name: Show the NICs nearest to GPU0
  ansible.builtin.debug:
    msg: "{{ ansible_facts['gpu_topology']['gpus'][0]['nearest_nics'] }}"

- name: Parse a saved output from a support bundle on the controller
  hpcfabric.cluster.gpu_topology_facts:
    output: "{{ lookup('ansible.builtin.file', 'bundle/nvidia-smi-topo-m.txt') }}"
  delegate_to: localhost

- name: Use a driver installed outside PATH and skip NVML
  hpcfabric.cluster.gpu_topology_facts:
    nvidia_smi_path: /opt/nvidia/bin/nvidia-smi
    nvml: false
'''

RETURN = r'''
ansible_facts:
  description: Facts set by the module.
  returned: success
  type: dict
  contains:
    gpu_topology:
      description: The topology matrix of the host.
      returned: success
      type: dict
      contains:
        gpu_count:
          description: Number of GPU columns in the matrix.
          returned: success
          type: int
          sample: 8
        nic_count:
          description: Number of NIC columns in the matrix.
          returned: success
          type: int
          sample: 10
        gpus:
          description: One entry per GPU, in matrix order.
          returned: success
          type: list
          elements: dict
          contains:
            name:
              description: Matrix name of the GPU.
              type: str
              sample: GPU0
            index:
              description: GPU index, as used by C(CUDA_VISIBLE_DEVICES) with C(CUDA_DEVICE_ORDER=PCI_BUS_ID).
              type: int
              sample: 0
            cpu_affinity:
              description: CPU Affinity exactly as printed; null when empty or C(N/A).
              type: str
              sample: 48-63,176-191
            cpus:
              description: The CPU affinity expanded to CPU numbers; empty when unknown.
              type: list
              elements: int
              sample: [48, 49, 50]
            numa_affinity:
              description: NUMA Affinity exactly as printed; null when empty or C(N/A).
              type: str
              sample: 0,3-9,11-17
            numa_nodes:
              description: The NUMA affinity expanded to node numbers; empty when unknown.
              type: list
              elements: int
              sample: [3]
            gpu_numa_id:
              description: NUMA node of the GPU's own memory (Grace systems); null when C(N/A) or not printed.
              type: int
              sample: 2
            nearest_nics:
              description:
                - Device names (or column names when unknown) of the NICs at the closest PCIe class, only when closer
                  than C(SYS).
              type: list
              elements: str
              sample: [mlx5_0, mlx5_1]
        nics:
          description: One entry per NIC column, in matrix order.
          returned: success
          type: list
          elements: dict
          contains:
            name:
              description: Column name of the NIC.
              type: str
              sample: NIC0
            device:
              description:
                - RDMA device name, from the NIC Legend, or the column name itself when old drivers print device names
                  as headers; null when the legend is missing.
              type: str
              sample: mlx5_0
            nearest_gpus:
              description: GPUs at the closest PCIe class from this NIC, only when closer than C(SYS).
              type: list
              elements: str
              sample: [GPU0, GPU1]
        links:
          description: Link code of every matrix cell, row name to column name to code, exactly as printed.
          returned: success
          type: dict
          sample: {GPU0: {GPU0: X, GPU1: NV12, NIC0: PXB}}
        nvlink:
          description: Whether any pair of GPUs is connected by NVLink (an C(NV#) code).
          returned: success
          type: bool
          sample: true
        nvml:
          description: NVML inventory of each GPU, or null when NVML was not used or not available.
          returned: success
          type: list
          elements: dict
          contains:
            index:
              description: NVML device index.
              type: int
              sample: 0
            name:
              description: Product name.
              type: str
              sample: NVIDIA H100 80GB HBM3
            uuid:
              description: GPU UUID.
              type: str
              sample: GPU-34bf77d1-c686-6821-79a8-32d326c5039c
            pci_bus_id:
              description: PCI bus id.
              type: str
              sample: 00000000:18:00.0
            memory_total_mib:
              description: Total memory in MiB.
              type: int
              sample: 81559
            driver_version:
              description: Driver version.
              type: str
              sample: 550.127.05
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.hpcfabric.cluster.plugins.module_utils.topology import (
    TopologyParseError, merge_nvml, parse_topology)

try:
    import pynvml
except ImportError:
    pynvml = None


def _text(value):
    return value.decode('utf-8', 'replace') if isinstance(value, bytes) else value


def nvml_inventory(lib):
    """Return (inventory, problem): the per-GPU NVML inventory, or None and why NVML failed."""
    if lib is None:
        return None, None
    try:
        lib.nvmlInit()
    except lib.NVMLError as exc:
        return None, 'NVML is unavailable, nvml is null: %s' % exc
    try:
        driver = _text(lib.nvmlSystemGetDriverVersion())
        inventory = []
        for index in range(lib.nvmlDeviceGetCount()):
            handle = lib.nvmlDeviceGetHandleByIndex(index)
            inventory.append({
                'index': index,
                'name': _text(lib.nvmlDeviceGetName(handle)),
                'uuid': _text(lib.nvmlDeviceGetUUID(handle)),
                'pci_bus_id': _text(lib.nvmlDeviceGetPciInfo(handle).busId),
                'memory_total_mib': lib.nvmlDeviceGetMemoryInfo(handle).total // (1024 * 1024),
                'driver_version': driver,
            })
        return inventory, None
    except lib.NVMLError as exc:
        return None, 'NVML query failed, nvml is null: %s' % exc
    finally:
        lib.nvmlShutdown()


def run_topo(module):
    binary = module.get_bin_path(module.params['nvidia_smi_path'])
    if not binary:
        module.fail_json(msg="nvidia-smi not found (looked for '%s' on PATH and in the sbin directories): "
                             "is the NVIDIA driver installed?" % module.params['nvidia_smi_path'])
    rc, out, err = module.run_command([binary, 'topo', '-m'])
    if rc != 0:
        said = (err.strip() or out.strip() or 'no output').splitlines()[0]
        module.fail_json(msg='nvidia-smi topo -m failed with exit code %d: %s' % (rc, said), rc=rc, stdout=out, stderr=err)
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            output=dict(type='str'),
            nvidia_smi_path=dict(type='str', default='nvidia-smi'),
            nvml=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    offline = module.params['output'] is not None
    text = module.params['output'] if offline else run_topo(module)
    try:
        facts, warnings = parse_topology(text)
    except TopologyParseError as exc:
        module.fail_json(msg='cannot parse nvidia-smi topo -m output: %s' % exc, line=exc.line)
    if module.params['nvml'] and not offline:
        inventory, problem = nvml_inventory(pynvml)
        facts, more = merge_nvml(facts, inventory)
        warnings.extend(more + ([problem] if problem else []))
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={'gpu_topology': facts})


if __name__ == '__main__':
    main()
