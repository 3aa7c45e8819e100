# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the validate role: validate_settings, threshold_inputs, allreduce_threshold, pair_threshold,
allreduce_verdict, isolation_rails, isolation_step, isolation_launch, perftest_problems, preflight_problems,
interface_states, host_problems, hostfile_entries, hostfile_hosts, mpirun_error, pair_results, train_smoke_verdict,
report_runs, mpi_launch_tools, job_hosts, srun_argv, salloc_argv, salloc_job,
shared_dir_problems.

Each filter is documented in its own file beside this one (isolation_step.yml, ...), as ansible-doc looks
documentation up by filter name. The logic is in the package module_utils/validate/ (settings, thresholds, verdicts,
preflight, the jobs' results, the report), module_utils/isolation.py, module_utils/isolation_launch.py and
module_utils/shared_dir.py.
"""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import isolation, mpi_local_fact, shared_dir
from ansible_collections.hpcfabric.cluster.plugins.module_utils import isolation_launch as launches
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate import (
    jobs, preflight, report, settings, thresholds, verdicts)
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

validate_settings = as_filter('validate_settings', settings.validate_settings)
threshold_inputs = as_filter('threshold_inputs', thresholds.threshold_inputs)
allreduce_threshold = as_filter('allreduce_threshold', thresholds.allreduce_threshold)
pair_threshold = as_filter('pair_threshold', thresholds.pair_threshold)
allreduce_verdict = as_filter('allreduce_verdict', verdicts.allreduce_verdict)
isolation_rails = as_filter('isolation_rails', isolation.isolation_rails)
isolation_step = as_filter('isolation_step', isolation.isolation_step)
isolation_launch = as_filter('isolation_launch', launches.round_launches)
perftest_problems = as_filter('perftest_problems', launches.perftest_problems)
preflight_problems = as_filter('preflight_problems', preflight.preflight_problems)
interface_states = as_filter('interface_states', preflight.interface_states)
host_problems = as_filter('host_problems', preflight.host_problems)
hostfile_entries = as_filter('hostfile_entries', jobs.hostfile_entries)
hostfile_hosts = as_filter('hostfile_hosts', jobs.hostfile_hosts)
mpirun_error = as_filter('mpirun_error', jobs.mpirun_error)
pair_results = as_filter('pair_results', jobs.pair_results)
train_smoke_verdict = as_filter('train_smoke_verdict', verdicts.train_smoke_verdict)
report_runs = as_filter('report_runs', report.report_runs)
mpi_launch_tools = as_filter('mpi_launch_tools', mpi_local_fact.launch_tools)
job_hosts = as_filter('job_hosts', jobs.job_hosts)
srun_argv = as_filter('srun_argv', jobs.srun_argv)
salloc_argv = as_filter('salloc_argv', jobs.salloc_argv)
salloc_job = as_filter('salloc_job', jobs.salloc_job)
shared_dir_problems = as_filter('shared_dir_problems', shared_dir.problems)

_FILTERS = (validate_settings, threshold_inputs, allreduce_threshold, pair_threshold, allreduce_verdict,
            isolation_rails, isolation_step, isolation_launch, perftest_problems, preflight_problems, interface_states,
            host_problems, hostfile_entries, hostfile_hosts, mpirun_error, pair_results, train_smoke_verdict,
            report_runs, mpi_launch_tools, job_hosts, srun_argv, salloc_argv, salloc_job,
            shared_dir_problems)


class FilterModule(object):
    """The validate role's filters."""

    def filters(self):
        return dict((function.__name__, function) for function in _FILTERS)
