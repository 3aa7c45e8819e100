# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The storage_mount_plan filter: the storage role's checks of storage_mounts and the options each mount gets."""
from __future__ import annotations

DOCUMENTATION = r'''
name: storage_mount_plan
short_description: Check the storage role's mounts and give each its fstab options and state
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Returns C(problems), one message per problem in list order, naming the entry (C([2].src ...)) or the variable
    (C(storage_nfs_options ...)); and, when there is none, C(mounts), each entry of the input with the options and
    state the role mounts it with.
  - Mount points must be absolute, not C(/), without C(.) or C(..) components, and unique (C(/data) and C(/data/)
    are one). NFS sources are C(server:/export) (a host name, an IPv4 address or a bracketed IPv6 address), Lustre
    sources C(nid@net:/fsname) with C(:)-separated failover NIDs and C(,)-separated NIDs of one MGS node. A Lustre
    mount needs O(lustre_packages).
  - Sources, mount points and options become fields of C(/etc/fstab), so a value holding whitespace, a control
    character or C(#) is a problem, never written.
  - C(opts) of a mount is its own C(opts), else O(nfs_options) or O(lustre_options) by filesystem, then C(_netdev),
    C(nofail) unless the mount sets C(nofail=false), C(x-systemd.automount) where it sets C(automount=true); empty
    options dropped, each kept once. C(state) is the mount's own, else O(state).
positional: _input
options:
  _input:
    description: C(storage_mounts), a list of C({src, path, fstype, opts, nofail, automount, state}).
    type: list
    elements: dict
    required: true
  nfs_options:
    description: Options of NFS mounts without C(opts) (C(storage_nfs_options)).
    type: str
    required: true
  lustre_options:
    description: Options of Lustre mounts without C(opts) (C(storage_lustre_options)).
    type: str
    required: true
  state:
    description: State of mounts that set none (C(storage_mount_state)).
    type: str
    required: true
  lustre_packages:
    description: The Lustre client packages (C(storage_lustre_packages)); empty is a problem where a Lustre mount is listed.
    type: list
    elements: str
    required: true
'''

EXAMPLES = r'''
- name: Mount points are absolute, unique, and sources have their filesystem's form
  ansible.builtin.assert:
    that: plan.problems | length == 0
    fail_msg: "storage_mounts on {{ inventory_hostname }}: {{ plan.problems | join('; ') }}"
  vars:
    plan: >-
      {{ storage_mounts | hpcfabric.cluster.storage_mount_plan(nfs_options=storage_nfs_options,
         lustre_options=storage_lustre_options, state=storage_mount_state, lustre_packages=storage_lustre_packages) }}

# [{'src': 'nfs01:/export/datasets', 'path': '/data/datasets', 'fstype': 'nfs', 'automount': true}]
# with nfs_options 'nfsvers=4.2,hard' and state 'mounted'
# => {'problems': [], 'mounts': [{'src': 'nfs01:/export/datasets', 'path': '/data/datasets', 'fstype': 'nfs',
#     'automount': true, 'opts': 'nfsvers=4.2,hard,_netdev,nofail,x-systemd.automount', 'state': 'mounted'}]}
# [{'src': 'nfs01', 'path': 'data', 'fstype': 'nfs'}]
# => {'problems': ['[0].path data is not an absolute mount point', '[0].src nfs01 is not server:/export'], 'mounts': []}
'''

RETURN = r'''
_value:
  description: The checks' result and the mounts.
  type: dict
  contains:
    problems:
      description: One message per problem; empty when the mounts can be written.
      type: list
      elements: str
    mounts:
      description: The input's mounts with C(opts) and C(state) set; empty when there are problems.
      type: list
      elements: dict
'''

from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_mounts import fstab_drift, mount_plan
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


class FilterModule:
    """The storage role's filter."""

    def filters(self):
        # storage_fstab_drift is documented in storage_fstab_drift.yml beside this file
        return {'storage_mount_plan': as_filter('storage_mount_plan', mount_plan),
                'storage_fstab_drift': as_filter('storage_fstab_drift', fstab_drift)}
