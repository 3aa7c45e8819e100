# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The os_vars_files filter: a role's per-OS variable files, least specific first, for include_vars to layer."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.os_vars import os_vars_files
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

DOCUMENTATION = r'''
name: os_vars_files
short_description: A role's per-OS variable files that exist, least specific first
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - The one rule by which every role of this collection layers its per-OS variables (linux-system-roles style).
    Loaded in the order returned, a later file overrides what an earlier one set, so a file holds only what
    differs from the layer below it and no two files need to repeat each other.
  - "The layers, each only when its file exists under O(_input)/vars: C(<os_family>.yml),
    C(<os_family>_<major>.yml) (one file for RHEL, Rocky and Alma of one release), C(<distribution>.yml),
    C(<distribution>_<major>.yml)."
  - A layer named twice (Debian's distribution is its OS family) is returned once, at its first place.
  - An OS with none of these files is one the role does not support, and the filter fails, naming the OS and the
    files the role has.
positional: _input, facts
options:
  _input:
    description: The role's directory, C(role_path).
    type: path
    required: true
  facts:
    description: The host's facts; C(os_family), C(distribution) and C(distribution_major_version) are read.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Load the OS's variables, the most specific last
  ansible.builtin.include_vars: "{{ item }}"
  loop: "{{ role_path | hpcfabric.cluster.os_vars_files(ansible_facts) }}"
'''

RETURN = r'''
_value:
  description: Absolute paths of the existing files, least specific first.
  type: list
  elements: path
'''


class FilterModule:
    """hpcfabric.cluster os_vars_files filter."""

    def filters(self):
        return {'os_vars_files': as_filter('os_vars_files', os_vars_files)}
