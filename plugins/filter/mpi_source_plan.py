# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The mpi_source_plan filter: which host builds the source flavour and which install its package."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_source import build_plan
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

DOCUMENTATION = r'''
name: mpi_source_plan
short_description: Which host of a play builds the mpi role's source flavour, and which install the package it makes
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Hosts that want the same install stamp want the same build. One of them builds it - O(build_host) when it is one
    of them, else the first that lacks it - and packs the prefix; every other host of that group that lacks it
    installs that package, checked by checksum, instead of compiling.
  - Fails when O(build_host) is not a host of the play, or wants another build than hosts that need one.
positional: _input, build_host
options:
  _input:
    description: Each host's C({stamp, needed}) - the stamp it wants as text, and whether its prefix lacks it.
    type: dict
    required: true
  build_host:
    description: The host the site names to build (C(mpi_source_build_host)).
    type: str
'''

EXAMPLES = r'''
- name: Plan the builds of the play
  ansible.builtin.debug:
    msg: "{{ {'node01': {'stamp': 'a', 'needed': true}, 'node02': {'stamp': 'a', 'needed': true}} | hpcfabric.cluster.mpi_source_plan }}"
'''

RETURN = r'''
_value:
  description: Per host C({builder, build, install, pack}).
  type: dict
'''


class FilterModule:
    """hpcfabric.cluster mpi_source_plan filter."""

    def filters(self):
        return {'mpi_source_plan': as_filter('mpi_source_plan', build_plan)}
