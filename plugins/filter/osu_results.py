# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers

from __future__ import annotations

DOCUMENTATION = r'''
name: osu_results
short_description: Parse OSU micro-benchmark output into rows
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Reads the text printed by an OSU micro-benchmark (C(osu_latency), C(osu_bw), C(osu_allreduce), ...).
  - C(benchmark) is the title line without its version, for example C(OSU MPI Latency Test).
  - C(metric) names the first value column, for example C(latency_us), C(bandwidth_mb_s) or
    C(avg_latency_us); each row holds the message size and that column's value.
  - MPI and UCX warnings printed between rows are skipped.
  - Fails naming the offending line when a row cannot be read or when there is no row at all.
positional: _input
options:
  _input:
    description: Standard output of the OSU benchmark.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Measure point-to-point latency between two nodes
  ansible.builtin.command: mpirun -np 2 --map-by node osu_latency
  register: __latency
  changed_when: false

- name: Check the small-message latency
  vars:
    __result: "{{ __latency.stdout | hpcfabric.cluster.osu_results }}"
  ansible.builtin.assert:
    that:
      - __result.metric == 'latency_us'
      - (__result.rows | selectattr('size_bytes', 'eq', 8) | first).value < 5
'''

RETURN = r'''
_value:
  description: The parsed benchmark.
  type: dict
  contains:
    benchmark:
      description: Benchmark title without version; null when the title line is missing.
      type: str
      sample: OSU MPI Bandwidth Test
    metric:
      description: Name of the first value column, lower case with units.
      type: str
      sample: bandwidth_mb_s
    rows:
      description: C(size_bytes) (int) and C(value) (float) per message size, in output order.
      type: list
      elements: dict
'''


from ansible_collections.hpcfabric.cluster.plugins.module_utils.bench_output import (
    parse_osu,
)
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def osu_results(text):
    """Parse OSU micro-benchmark output; see DOCUMENTATION."""
    if not isinstance(text, str):
        raise TypeError('expects the benchmark output as a string, got %s' % type(text).__name__)
    return parse_osu(text)


class FilterModule(object):
    """OSU micro-benchmark result filter."""

    def filters(self):
        return {'osu_results': as_filter('osu_results', osu_results)}
