# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The mpi_stack_problems filter: why an installed MPI stack is not the one the mpi role was asked for."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_info import stack_problems
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

DOCUMENTATION = r'''
name: mpi_stack_problems
short_description: Why an MPI stack, as mpi_facts read it, is not the one asked for
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Compares the facts P(hpcfabric.cluster.mpi_facts#module) read from an installed Open MPI and UCX with what the
    mpi role was asked for, and returns one line per difference (an empty list when there is none).
  - With O(cuda), Open MPI must report C(mpi_built_with_cuda_support) true and UCX must have been configured with
    CUDA (C(ucx_info -v)); both are properties of the build, readable on any node.
  - UCX lists its C(cuda_copy) and C(cuda_ipc) transports (C(ucx_info -d)) only where it can open a CUDA context,
    that is on a node with an NVIDIA GPU and its driver loaded. They are required only with O(gpu_driver); on a node
    without a driver a CUDA-aware build lists none, whatever it was built with.
  - With O(ucc), the build must have Open MPI's coll/ucc component (C(coll_components)).
positional: _input, cuda, gpu_driver, expected, ucc
options:
  _input:
    description: C(ansible_facts.mpi) as P(hpcfabric.cluster.mpi_facts#module) set it.
    type: dict
    required: true
  cuda:
    description: The stack must be CUDA-aware (the mpi role's C(mpi_cuda)).
    type: bool
    default: false
  gpu_driver:
    description: The node has a loaded NVIDIA driver (C(/proc/driver/nvidia/version) exists).
    type: bool
    default: false
  expected:
    description: The versions installed, C({ompi, ucx}); a version left out is not checked.
    type: dict
  ucc:
    description: The stack must have coll/ucc (the mpi role's C(mpi_ucc)).
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: The stack is what was asked for
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ inventory_hostname }}: {{ __problems | join('; ') }}"
  vars:
    __problems: "{{ ansible_facts['mpi'] | hpcfabric.cluster.mpi_stack_problems(true, false, {'ompi': '4.1.4'}) }}"
'''

RETURN = r'''
_value:
  description: One line per difference, such as C(UCX was not configured with CUDA (ucx_info -v... no --with-cuda)).
  type: list
  elements: str
'''


class FilterModule:
    """hpcfabric.cluster mpi_stack_problems filter."""

    def filters(self):
        return {'mpi_stack_problems': as_filter('mpi_stack_problems', stack_problems)}
