# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validate role's input rules: the threshold settings, the directories it creates, the dcgmi level, the golden
manifest, the counter rules and how long a Slurm validation holds its nodes."""
from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpcfabric.cluster.plugins.module_utils.drift import golden_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import path_settings_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.port_counters import rule_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import threshold_inputs

OWNED_DIRS = ('validate_work_dir', 'validate_checkpoint_dir', 'validate_bench_dir', 'validate_report_dir')
DCGMI_LEVELS = (1, 2, 3, 4)


def _dcgmi_level_problem(level):
    # an argument spec's choices refuse the null default, so the level is checked here
    if level is None:
        return None
    try:
        ok = not isinstance(level, bool) and int(level) in DCGMI_LEVELS and str(int(level)) == str(level).strip()
    except (TypeError, ValueError):
        ok = False
    return None if ok else ('must be 1, 2, 3 or 4 (dcgmi diag -r N), or null for no diagnostic; got %r' % (level,))


def _hold_problem(settings):
    # the allocation must outlast one job at least, or its jobs die at the time limit and read as a slow fabric
    if settings.get('validate_launcher') != 'slurm':
        return None
    try:
        minutes = int(settings.get('validate_slurm_hold_minutes'))
        job = int(settings.get('validate_mpirun_timeout'))
    except (TypeError, ValueError):
        return None
    if minutes * 60 < job:
        return ('%d minutes is shorter than one job may take (validate_mpirun_timeout %d s): the allocation would end '
                'under it' % (minutes, job))
    return None


def problems(settings):
    """See ``role_settings``; the threshold messages name their variable."""
    try:
        found = [('validate', message) for message in threshold_inputs(settings)['problems']]
    except ValueError as error:
        found = [('validate', str(error))]
    found += path_settings_problems(settings, [(name, True) for name in OWNED_DIRS])
    found += [('validate_dcgmi_diag_level', problem) for problem in [_dcgmi_level_problem(settings.get('validate_dcgmi_diag_level'))]
              if problem]
    found += [('validate_slurm_hold_minutes', problem) for problem in [_hold_problem(settings)] if problem]
    if boolean(settings.get('validate_drift'), strict=False):
        found += [('validate', message) for message in golden_problems(settings.get('validate_golden'))]
    if boolean(settings.get('validate_counters'), strict=False):
        rules = rule_problems(settings.get('validate_counters_fatal'), settings.get('validate_counters_warn_rates'))
        found += [('validate', message) for message in rules]
    return found
