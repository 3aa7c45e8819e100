# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Every role's input rules, one module per role, one tier.

Each module's ``problems(settings)`` takes the role's variables by name (``{name: value}``: what the role sees, the
inventory's value over the role's default) and returns ``[(label, message)]``: the variable (or the role, where the
message names the variable itself) and what is wrong with it. The role's own ``tasks/assert.yml`` calls it through the
``role_settings_problems`` filter before it changes anything, and ``playbooks/check_inventory.yml`` calls the same
function for every host of the inventory before any host is touched, so a rule holds in both places or in neither.

Rules about a host's state (its OS, its devices, a command's answer) are not here: they stay in the role, marked
``# host state:`` above their assert (``tests/playbooks/test_input_rules_reachable.py`` reads them all).

``settings`` may miss a variable or hold None for it: the role did not get it, or check_inventory could not resolve the
role's default (a Jinja template such as ``{{ validate_work_dir }}/checkpoints``). A rule skips a value it does not
have; the role checks it again with the value resolved.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings import (
    bench_env, mpi, mpi_hostfile, nvidia_driver, os_base, rdma, roce_qos, slurm, ssh_trust, storage, switch_qos, validate)

RULES = {
    'bench_env': bench_env.problems,
    'mpi': mpi.problems,
    'mpi_hostfile': mpi_hostfile.problems,
    'nvidia_driver': nvidia_driver.problems,
    'os_base': os_base.problems,
    'rdma': rdma.problems,
    'roce_qos': roce_qos.problems,
    'slurm': slurm.problems,
    'ssh_trust': ssh_trust.problems,
    'storage': storage.problems,
    'switch_qos': switch_qos.problems,
    'validate': validate.problems,
}
# roles whose input rules span hosts: the cluster model holds them (module_utils/cluster_model.py and fabric_plan.py),
# which check_inventory's cluster model step and the roles' own asserts both run
CLUSTER_ROLES = ('cluster_model', 'fabric_network')


def role_problems(role, settings, host):
    """``['<variable> on <host>: <what is wrong>']`` for ``role``'s ``settings`` on ``host``; [] for a role without
    rules of its own."""
    if not isinstance(settings, dict):
        raise ValueError('settings must map the %s role\'s variables to their values, got %s'
                         % (role, type(settings).__name__))
    rules = RULES.get(role)
    if rules is None:
        if role in CLUSTER_ROLES:
            return []
        raise ValueError('%r is not a role of this collection (%s)' % (role, ', '.join(sorted(RULES) + list(CLUSTER_ROLES))))
    return ['%s on %s: %s' % (label, host, message) for label, message in rules(settings)]
