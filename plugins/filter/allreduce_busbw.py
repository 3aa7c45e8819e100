# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers

from __future__ import annotations

DOCUMENTATION = r'''
name: allreduce_busbw
short_description: Bus bandwidth of an allreduce from its algorithm bandwidth
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Returns O(_input) * 2 * (n - 1) / n with n = O(ranks), the bus bandwidth definition of nccl-tests
    for allreduce. Bus bandwidth can be compared with the link speed whatever the rank count.
  - The result is in the unit of the input (GB/s in, GB/s out).
  - Fails for O(ranks) below 1, a negative bandwidth or non-numeric input.
positional: _input, ranks
options:
  _input:
    description: Algorithm bandwidth (message size divided by time).
    type: float
    required: true
  ranks:
    description: Number of ranks taking part in the allreduce.
    type: int
    required: true
seealso:
  - name: nccl-tests performance notes
    description: Definitions of algbw and busbw.
    link: https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
'''

EXAMPLES = r'''
- name: Bus bandwidth of 100 GB/s algorithm bandwidth on 8 ranks
  ansible.builtin.debug:
    msg: "{{ 100 | hpcfabric.cluster.allreduce_busbw(8) }}"
  # => 175.0
'''

RETURN = r'''
_value:
  description: The bus bandwidth.
  type: float
'''

from ansible_collections.hpcfabric.cluster.plugins.module_utils.bench_output import allreduce_busbw as _busbw
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def _algbw(value):
    # Values read from command output or templated vars arrive as strings.
    if isinstance(value, bool):
        raise ValueError('algbw must be a number, got %r' % (value,))
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError('algbw must be a number, got %r' % (value,)) from exc


def _ranks(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip('-').isdigit():
        return int(value)
    raise ValueError('ranks must be a whole number, got %r' % (value,))


def allreduce_busbw(algbw, ranks):
    """algbw * 2 * (ranks - 1) / ranks; see DOCUMENTATION."""
    return _busbw(_algbw(algbw), _ranks(ranks))


class FilterModule(object):
    """Allreduce bus bandwidth filter."""

    def filters(self):
        return {'allreduce_busbw': as_filter('allreduce_busbw', allreduce_busbw)}
