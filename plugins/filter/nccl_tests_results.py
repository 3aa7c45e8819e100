# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers

from __future__ import annotations

DOCUMENTATION = r'''
name: nccl_tests_results
short_description: Parse nccl-tests all_reduce_perf output into rows and summary values
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads the text printed by nccl-tests C(all_reduce_perf) and returns every result row with its
    out-of-place and in-place time, algorithm bandwidth and bus bandwidth, plus the
    C(# Avg bus bandwidth) and C(# Out of bounds values) summary lines.
  - Understands the layout without a C(root) column (nccl-tests 2.0 to 2.10, C(error) columns) and
    the current one (C(redop), C(root) and C(#wrong) columns, C(N/A) when validation is off).
  - NCCL INFO and WARN lines, launcher messages and C(srun -l) or C(mpirun --tag-output) prefixes
    may appear anywhere, including inside the table.
  - Fails naming the offending line when a result row cannot be read or when there is no row at all.
positional: _input
options:
  _input:
    description: Standard output of C(all_reduce_perf).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Run the allreduce benchmark
  ansible.builtin.command: mpirun -np 16 --hostfile /etc/mpi/hostfile all_reduce_perf -b 8 -e 8G -f 2 -g 1
  register: __allreduce
  changed_when: false

- name: Check the bus bandwidth of the largest message
  vars:
    __result: "{{ __allreduce.stdout | hpcfabric.cluster.nccl_tests_results }}"
  ansible.builtin.assert:
    that:
      - __result.out_of_bounds == 0
      - __result.rows[-1].in_place.busbw_gbs >= 300
'''

RETURN = r'''
_value:
  description: The parsed benchmark.
  type: dict
  contains:
    rows:
      description: One entry per message size, in output order.
      type: list
      elements: dict
      contains:
        size_bytes:
          description: Message size in bytes.
          type: int
        count:
          description: Element count.
          type: int
        type:
          description: Data type, for example C(float).
          type: str
        redop:
          description: Reduction operation, for example C(sum); null for layouts without one.
          type: str
        out_of_place:
          description: C(time_us), C(algbw_gbs) and C(busbw_gbs) of the out-of-place run (floats).
          type: dict
        in_place:
          description: C(time_us), C(algbw_gbs) and C(busbw_gbs) of the in-place run (floats).
          type: dict
    avg_busbw_gbs:
      description: The C(# Avg bus bandwidth) value in GB/s; null when the output was cut short.
      type: float
    out_of_bounds:
      description: The C(# Out of bounds values) count; null when the output was cut short.
      type: int
'''


from ansible_collections.hpcfabric.cluster.plugins.module_utils.bench_output import (
    parse_nccl_tests,
)
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def nccl_tests_results(text):
    """Parse all_reduce_perf output; see DOCUMENTATION."""
    if not isinstance(text, str):
        raise TypeError('expects the all_reduce_perf output as a string, got %s' % type(text).__name__)
    return parse_nccl_tests(text)


class FilterModule(object):
    """nccl-tests result filter."""

    def filters(self):
        return {'nccl_tests_results': as_filter('nccl_tests_results', nccl_tests_results)}
