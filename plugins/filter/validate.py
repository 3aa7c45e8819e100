# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the validate role: threshold_inputs, allreduce_threshold, pair_threshold, allreduce_verdict,
isolation_rails, isolation_step, isolation_launch, perftest_problems, preflight_problems, interface_states,
host_problems, hostfile_entries, mpirun_error, pair_results, train_smoke_verdict, report_runs, mpi_launch_tools,
mpirun_hosts, shared_dir_problems.

Each filter is documented in its own file beside this one (isolation_step.yml, ...), as ansible-doc looks
documentation up by filter name. The logic is in module_utils/validate_checks.py, module_utils/isolation.py,
module_utils/isolation_launch.py and module_utils/shared_dir.py (the decisions) and module_utils/validate_collect.py
(what the role's tasks gathered, put into shape).
"""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import (
    isolation, mpi_local_fact, shared_dir, validate_checks, validate_collect)
from ansible_collections.hpcfabric.cluster.plugins.module_utils import isolation_launch as launches
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

threshold_inputs = as_filter('threshold_inputs', validate_checks.threshold_inputs)
allreduce_threshold = as_filter('allreduce_threshold', validate_checks.allreduce_threshold)
pair_threshold = as_filter('pair_threshold', validate_checks.pair_threshold)
allreduce_verdict = as_filter('allreduce_verdict', validate_checks.allreduce_verdict)
isolation_rails = as_filter('isolation_rails', isolation.isolation_rails)
isolation_step = as_filter('isolation_step', isolation.isolation_step)
isolation_launch = as_filter('isolation_launch', launches.round_launches)
perftest_problems = as_filter('perftest_problems', launches.perftest_problems)
preflight_problems = as_filter('preflight_problems', validate_checks.preflight_problems)
interface_states = as_filter('interface_states', validate_collect.interface_states)
host_problems = as_filter('host_problems', validate_collect.host_problems)
hostfile_entries = as_filter('hostfile_entries', validate_collect.hostfile_entries)
mpirun_error = as_filter('mpirun_error', validate_collect.mpirun_error)
pair_results = as_filter('pair_results', validate_collect.pair_results)
train_smoke_verdict = as_filter('train_smoke_verdict', validate_collect.train_smoke_verdict)
report_runs = as_filter('report_runs', validate_collect.report_runs)
mpi_launch_tools = as_filter('mpi_launch_tools', mpi_local_fact.launch_tools)
mpirun_hosts = as_filter('mpirun_hosts', validate_collect.mpirun_hosts)
shared_dir_problems = as_filter('shared_dir_problems', shared_dir.problems)

_FILTERS = (threshold_inputs, allreduce_threshold, pair_threshold, allreduce_verdict, isolation_rails,
            isolation_step, isolation_launch, perftest_problems, preflight_problems, interface_states, host_problems, hostfile_entries, mpirun_error,
            pair_results, train_smoke_verdict, report_runs, mpi_launch_tools, mpirun_hosts, shared_dir_problems)


class FilterModule(object):
    """The validate role's filters."""

    def filters(self):
        return dict((function.__name__, function) for function in _FILTERS)
