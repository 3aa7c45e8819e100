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
    mount needs O(lustre_packages) and an LNet network its MGS is on (O(lnet_networks)).
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
  lnet_networks:
    description:
      - The LNet networks (C(storage_lnet_networks)). A Lustre mount needs at least one, and one its MGS NIDs are on
        (C(o2ib0) and C(o2ib) are one network).
    type: list
    elements: str
    default: []
  lnet_ping_nids:
    description: NIDs the role pings over LNet (C(storage_lnet_ping_nids)); each must be a NID on one of O(lnet_networks).
    type: list
    elements: str
    default: []
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

import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils import lnet
from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_mounts import fstab_drift, mount_plan
from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_readback import findmnt_problems, live_problems
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def _yaml(text):
    """lnetctl's YAML answer, or None when it printed something else (``opening /dev/lnet failed``)."""
    try:
        return yaml.safe_load(text or '')
    except yaml.YAMLError:
        return None


def _texts(outputs, name):
    """A command's outputs (standard output, then error) as one text: joined here, since a line break written in a
    task's template arrives as the two characters backslash and n."""
    if not isinstance(outputs, (list, tuple)) or not all(isinstance(text, str) for text in outputs):
        raise TypeError('%s must be a list of texts (standard output, then error), got %r' % (name, outputs))
    return outputs


def readback_problems(mounts, findmnt_verify, mount_points=None):
    """findmnt --verify's errors on the role's mounts, then (when given) the live mounts' differences."""
    return findmnt_problems(mounts, '\n'.join(_texts(findmnt_verify, 'findmnt_verify'))) + (
        [] if mount_points is None else live_problems(mounts, mount_points))


def _answer(*texts):
    """lnetctl's YAML answer among ``texts`` (standard output, then error: it prints errors there): the first that
    holds its ``net:`` list, ``ping:`` list or error, else an error whose reason is the text itself, since a bare
    message such as "opening /dev/lnet failed: No such device" also parses as YAML."""
    for text in texts:
        tree = _yaml(text)
        if isinstance(tree, dict) and ('net' in tree or 'ping' in tree or lnet.error_text(tree)):
            return tree
    return {'descr': '\n'.join(t.strip() for t in texts if t and t.strip()) or 'no output'}


def lnet_problems(networks, net_show, pings=()):
    """The planned networks that lnetctl net show does not show up, then each ping that failed."""
    problems = lnet.net_problems(networks, _answer(*_texts(net_show, 'net_show')))
    for ping in pings:
        reason = lnet.ping_problem(ping['item'], ping.get('rc'), _answer(ping.get('stdout'), ping.get('stderr')))
        if reason:
            problems.append(reason)
    return problems


class FilterModule:
    """The storage role's filters."""

    def filters(self):
        # the others are documented in <name>.yml beside this file
        return {'storage_mount_plan': as_filter('storage_mount_plan', mount_plan),
                'storage_fstab_drift': as_filter('storage_fstab_drift', fstab_drift),
                'storage_readback_problems': as_filter('storage_readback_problems', readback_problems),
                'lnet_config': as_filter('lnet_config', lnet.lnet_conf),
                'lnet_problems': as_filter('lnet_problems', lnet_problems)}
