# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""mpi_local_fact: what the validation takes from the mpi role's local fact, and what it refuses."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_local_fact import (
    FACT_FILE, fact_problems, launch_tools, launch_tools_differ)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.preflight import preflight_problems

HPCX = '/opt/hpcx/hpcx-v2.20-gcc-inbox-ubuntu22.04-cuda12-x86_64'


def hpcx_fact(**changes):
    fact = {'flavour': 'hpcx', 'prefix': HPCX + '/ompi', 'mpirun': HPCX + '/ompi/bin/mpirun',
            'ompi_info': HPCX + '/ompi/bin/ompi_info', 'ucx_info': HPCX + '/ucx/bin/ucx_info',
            'ucx_prefix': HPCX + '/ucx', 'python': HPCX + '/mpi4py-venv/bin/python', 'cuda_aware': True,
            'environment': {'OPAL_PREFIX': HPCX + '/ompi', 'LD_LIBRARY_PATH': HPCX + '/ompi/lib:' + HPCX + '/ucx/lib'}}
    fact.update(changes)
    return fact


def test_hpcx_tools_come_from_the_fact_with_the_environment_they_need():
    tools = launch_tools(hpcx_fact())
    assert tools['problems'] == []
    assert tools['source'] == FACT_FILE
    # ucx_info is in another directory than mpirun: a prefix guess would miss it
    assert (tools['mpirun'], tools['ompi_info'], tools['ucx_info']) == (
        HPCX + '/ompi/bin/mpirun', HPCX + '/ompi/bin/ompi_info', HPCX + '/ucx/bin/ucx_info')
    assert tools['python'] == HPCX + '/mpi4py-venv/bin/python'
    assert tools['environment']['OPAL_PREFIX'] == HPCX + '/ompi'


def test_an_explicit_interpreter_wins_over_the_fact():
    assert launch_tools(hpcx_fact(), python='/srv/bench/bin/python')['python'] == '/srv/bench/bin/python'


def test_an_explicit_prefix_wins_and_keeps_the_facts_interpreter_only_for_the_same_prefix():
    tools = launch_tools(hpcx_fact(), mpi_prefix='/opt/site-mpi/')
    assert tools['source'] == 'validate_mpi_prefix'
    assert (tools['mpirun'], tools['ucx_info']) == ('/opt/site-mpi/bin/mpirun', '/opt/site-mpi/bin/ucx_info')
    assert tools['environment'] == {}
    # the fact's mpi4py was built for another MPI
    assert tools['python'] is None
    assert tools['problems'] == ['no Python with mpi4py for this MPI (the mpi role built none: mpi_mpi4py is false): '
                                 'set validate_python']
    same = launch_tools(hpcx_fact(), mpi_prefix=HPCX + '/ompi')
    assert same['python'] == HPCX + '/mpi4py-venv/bin/python' and same['problems'] == []


def test_a_relative_prefix_is_refused():
    with pytest.raises(ValueError, match='validate_mpi_prefix must be an absolute path'):
        launch_tools(None, mpi_prefix='opt/mpi')


def test_no_fact_and_no_prefix_says_what_to_do_and_never_guesses_path():
    tools = launch_tools(None)
    assert tools['mpirun'] is None and tools['ompi_info'] is None
    assert tools['problems'] == ['no MPI install recorded (/etc/ansible/facts.d/hpcfabric_mpi.fact is missing): run the '
                                 'hpcfabric.cluster.mpi role on this node first, or set validate_mpi_prefix']


def test_a_build_without_mpi4py_needs_validate_python():
    assert launch_tools(hpcx_fact(python=None))['problems'][0].startswith('no Python with mpi4py')
    assert launch_tools(hpcx_fact(python=None), python='/usr/bin/python3')['problems'] == []


@pytest.mark.parametrize('changes, problem', [
    ({'flavour': 'spack'}, "flavour 'spack' is not one of distro, hpcx, source"),
    ({'mpirun': 'mpirun'}, "mpirun 'mpirun' is not an absolute path"),
    ({'ucx_info': None}, 'ucx_info None is not an absolute path'),
    ({'python': 'python3'}, "python 'python3' is neither null nor an absolute path"),
    ({'cuda_aware': 'yes'}, "cuda_aware 'yes' is not true, false or null"),
    ({'environment': {'OPAL_PREFIX': 1}}, 'environment is not a map of names to strings'),
])
def test_a_malformed_fact_is_refused_naming_the_field(changes, problem):
    assert fact_problems(hpcx_fact(**changes)) == ['%s: %s' % (FACT_FILE, problem)]
    tools = launch_tools(hpcx_fact(**changes))
    assert tools['problems'] == ['%s: %s' % (FACT_FILE, problem)] and tools['mpirun'] is None


def test_a_fact_that_is_not_an_object_is_refused():
    # Ansible hands over the text of a .fact file it cannot parse as JSON
    assert fact_problems('{"flavour": "distro"') == ['%s is not a JSON object' % FACT_FILE]


def test_nodes_must_have_the_launchers_mpirun_and_interpreter():
    launcher = launch_tools(hpcx_fact())
    other = launch_tools(hpcx_fact(mpirun='/opt/hpcx/old/ompi/bin/mpirun', python='/opt/hpcx/old/mpi4py-venv/bin/python'))
    assert launch_tools_differ(other, launcher, 'node01') == [
        'MPI: mpirun /opt/hpcx/old/ompi/bin/mpirun, but the launcher node01 has %s/ompi/bin/mpirun' % HPCX,
        'MPI: python /opt/hpcx/old/mpi4py-venv/bin/python, but the launcher node01 has %s/mpi4py-venv/bin/python' % HPCX]
    assert launch_tools_differ(launcher, launcher, 'node01') == []
    # a node without tools already has its own problem line: no second one
    assert launch_tools_differ(launch_tools(None), launcher, 'node01') == []


def test_preflight_lists_the_install_problems_on_cpu_and_cuda_nodes():
    missing = launch_tools(None)['problems']
    expect = {'rdma': False, 'launcher': 'node01', 'launcher_mpi_tools': launch_tools(hpcx_fact())}
    facts = {'mpi_tools': launch_tools(None), 'mpi': None, 'gpu_topology': {'gpu_count': 1}}
    assert preflight_problems(facts, dict(expect, device='cpu')) == missing
    # without tools mpi_facts did not run: the install line says why, not a second "mpi facts missing"
    assert preflight_problems(facts, dict(expect, device='cuda')) == missing


def test_preflight_names_a_node_whose_mpi_differs_from_the_launchers():
    facts = {'mpi_tools': launch_tools(hpcx_fact(python='/usr/bin/python3')), 'mpi': None}
    expect = {'device': 'cpu', 'rdma': False, 'launcher': 'node01', 'launcher_mpi_tools': launch_tools(hpcx_fact())}
    assert preflight_problems(facts, expect) == [
        'MPI: python /usr/bin/python3, but the launcher node01 has %s/mpi4py-venv/bin/python' % HPCX]


BENCH = '/opt/hpcfabric/bench/venv/bin/python'


def test_the_jobs_run_the_bench_venv_built_on_the_recorded_python():
    tools = launch_tools(hpcx_fact(), bench_python=BENCH)
    assert (tools['python'], tools['mpi4py_python'], tools['problems']) == (BENCH, HPCX + '/mpi4py-venv/bin/python', [])


def test_validate_python_wins_over_the_bench_venv():
    tools = launch_tools(hpcx_fact(), python='/srv/py/bin/python', bench_python=BENCH)
    assert tools['python'] == tools['mpi4py_python'] == '/srv/py/bin/python'


def test_no_bench_venv_without_an_mpi4py_to_build_it_on():
    tools = launch_tools(hpcx_fact(python=None), bench_python=BENCH)
    assert tools['python'] is None and tools['problems'][0].startswith('no Python with mpi4py')


def test_an_explicit_prefix_of_the_recorded_mpi_keeps_its_python_under_the_bench_venv():
    tools = launch_tools(hpcx_fact(), mpi_prefix=HPCX + '/ompi', bench_python=BENCH)
    assert (tools['python'], tools['mpi4py_python']) == (BENCH, HPCX + '/mpi4py-venv/bin/python')
    assert launch_tools(None, mpi_prefix='/opt/other', bench_python=BENCH)['python'] is None
