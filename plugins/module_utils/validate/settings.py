# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validate role's settings, checked and turned into what its tasks hand on, in one call (the validate_settings
filter).

The role gives every ``validate_*`` variable by name, as Ansible holds it (``meta/argument_specs.yml`` declares
them; numbers and booleans may be strings from ``-e``); nothing here lists them again. The settings' rules are
``role_settings.validate``'s, which the role and the offline inventory check both run before this.
"""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.units import whole


def _flag(variables, name):
    return boolean(variables.get(name), strict=False)


def _engines(variables):
    """The judged engine first, then the reported ones: the order the all-node job runs them in."""
    judged = variables.get('validate_engine')
    return [judged] + [name for name in variables.get('validate_engines_reported') or [] if name != judged]


def _golden_packages(variables):
    """The packages ``validate_golden`` names as ``package:<name>``: the drift check reads them too."""
    return [key[len('package:'):] for key in variables.get('validate_golden') or {} if str(key).startswith('package:')]


def validate_settings(variables, in_group):
    """What the validate role's tasks read from its settings: ``{problems, engines, nccl, bench_argv, mpirun_args,
    perftest_wanted, drift_packages, isolation, launch}``.

    ``variables`` maps each ``validate_*`` variable to its value; ``in_group`` says whether the host is in
    ``validate_group``.

    - ``problems``: the host outside the group (the settings' own rules are ``role_settings.validate``'s, which the
      role checks first);
    - ``engines``: the judged engine, then the reported ones; ``nccl``: whether the nccl engine runs on GPU buffers
      (the bench environment then needs NCCL);
    - ``bench_argv``: ``allreduce.py``'s sweep arguments; ``mpirun_args``: what every mpirun gets after the
      command (the rank wrapper binds to the GPU's NUMA node itself, so mpirun must not bind as well);
    - ``perftest_wanted``: whether the isolation may use ib_write_bw, so facts look for it;
    - ``drift_packages``: the packages the drift check reads;
    - ``isolation``: ``isolation_step``'s ``repeats`` and ``seed``; ``launch``: the part of ``isolation_launch``'s
      settings that comes from the settings (``tool``, ``device``, ``work_dir``, ``perftest_*`` and ``bench``, the pair
      run's allreduce.py and its arguments).
    """
    if not isinstance(variables, dict):
        raise ValueError('variables must map the validate role\'s variables to their values, got %s'
                         % type(variables).__name__)
    problems = [] if in_group else ['validate_group: this host is not in group %s' % variables.get('validate_group')]
    device = variables.get('validate_device')
    engines = _engines(variables)
    bench_argv = ['--device', device, '--min-bytes', str(variables.get('validate_min_bytes')),
                  '--max-bytes', str(variables.get('validate_max_bytes')), '--iters', str(variables.get('validate_iters')),
                  '--warmup', str(variables.get('validate_warmup'))]
    if _flag(variables, 'validate_inject_wrong_result'):
        bench_argv.append('--inject-wrong-result')
    tool = variables.get('validate_isolation_tool')
    return {
        'problems': problems,
        'engines': engines,
        'nccl': device == 'cuda' and 'nccl' in engines,
        'bench_argv': bench_argv,
        'mpirun_args': (['--bind-to', 'none'] if device == 'cuda' else []) + list(variables.get('validate_mpirun_extra_args') or []),
        'perftest_wanted': variables.get('validate_isolation') != 'never' and tool != 'mpi' and _flag(variables, 'validate_rdma'),
        'drift_packages': list(dict.fromkeys(list(variables.get('validate_drift_packages') or []) + _golden_packages(variables))),
        'isolation': {'repeats': whole(variables.get('validate_isolation_repeats'), 'validate_isolation_repeats'),
                      'seed': variables.get('validate_isolation_seed')},
        'launch': {
            'tool': tool, 'device': device, 'work_dir': variables.get('validate_work_dir'),
            'perftest_bytes': variables.get('validate_perftest_bytes'),
            'perftest_seconds': variables.get('validate_perftest_seconds'),
            'perftest_port': variables.get('validate_perftest_port'), 'perftest_args': variables.get('validate_perftest_args'),
            # a pair run is itself the link's test: no link probe after its sweep
            'bench': ['%s/allreduce.py' % variables.get('validate_bench_dir')] + bench_argv
            + ['--engine', engines[0], '--probe-bytes', '0'],
        },
    }
