# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the slurm role and the validation under Slurm: hostlist_compress, hostlist_expand, slurm_plan,
slurm_files, slurm_inventory_problems, slurm_restart_needed, slurm_munge_key_action, slurm_readback_problems,
slurm_nodes, slurm_validation_start, slurm_validation_end, slurm_hosts_block, slurm_install_plan,
slurm_version_problems.

Each is documented in its own file beside this one, as ansible-doc looks documentation up by filter name. The logic is
in module_utils/slurm_conf.py, and for the install (packages, site repository, installed version) in
module_utils/slurm_install.py.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import slurm_conf, slurm_install
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def _files(plan, extra=None):
    return {'slurm.conf': slurm_conf.render_slurm_conf(plan, extra), 'gres.conf': slurm_conf.render_gres_conf(plan),
            'cgroup.conf': slurm_conf.render_cgroup_conf(plan), 'topology.conf': slurm_conf.render_topology_conf(plan)}


def _restart(old_text, new_text):
    restart, reasons = slurm_conf.restart_needed(old_text, new_text)
    return {'restart': restart, 'reasons': reasons}


def _readback(text, plan):
    return slurm_conf.node_readback_problems(plan, slurm_conf.parse_scontrol_nodes(text))


def _start(text, hosts, gpu_counts):
    return slurm_conf.validation_start(slurm_conf.parse_scontrol_nodes(text), hosts, gpu_counts)


def _end(text, held, verdicts):
    return slurm_conf.validation_end(slurm_conf.parse_scontrol_nodes(text), held, verdicts)


_FILTERS = (as_filter('hostlist_compress', slurm_conf.hostlist_compress),
            as_filter('hostlist_expand', slurm_conf.hostlist_expand),
            as_filter('slurm_plan', slurm_conf.plan_from_hostvars),
            as_filter('slurm_files', _files),
            as_filter('slurm_inventory_problems', slurm_conf.inventory_problems),
            as_filter('slurm_restart_needed', _restart),
            as_filter('slurm_munge_key_action', slurm_conf.munge_key_action),
            as_filter('slurm_readback_problems', _readback),
            as_filter('slurm_nodes', slurm_conf.parse_scontrol_nodes),
            as_filter('slurm_validation_start', _start),
            as_filter('slurm_validation_end', _end),
            as_filter('slurm_hosts_block', slurm_conf.hosts_block),
            as_filter('slurm_install_plan', slurm_install.install_plan),
            as_filter('slurm_version_problems', slurm_install.version_problems))


class FilterModule(object):
    """The slurm role's filters."""

    def filters(self):
        return dict((function.__name__, function) for function in _FILTERS)
