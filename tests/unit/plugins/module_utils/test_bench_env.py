# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""bench_env: the Python the validation runs - which CuPy, which interpreter, which mpi4py - and the bench_env role's
files/import_probe.py run for real: by this interpreter, and by venvs made the way the role makes them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.bench_env import (
    PTH_NAME, cuda_toolkit_version, cupy_choice, nccl_choice, plan, problems, pyvenv_cfg, read_report,
    settings_problems)

ROOT = Path(__file__).resolve().parents[4]
PROBE = ROOT / 'roles' / 'bench_env' / 'files' / 'import_probe.py'
VENV = '/opt/hpcfabric/bench/venv'


def run_script(python, *modules):
    """What import_probe.py prints when ``python`` runs it, as the role runs it: the script on stdin."""
    proc = subprocess.run([str(python), '-', *modules], input=PROBE.read_text(), capture_output=True, text=True,
                          check=True, timeout=60)
    return proc.stdout


# --- which CuPy ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name, version, package', [
    ('13.3.1-version.json', '13.3.1', 'cupy-cuda13x'),
    ('11.8-version.json', '11.8.20220929', 'cupy-cuda11x'),
    ('12.1-version.json', '12.1.20230222', 'cupy-cuda12x'),
])
def test_the_cuda_major_version_chooses_the_cupy_series(fixture_text, name, version, package):
    text = fixture_text('cuda', name)
    assert cuda_toolkit_version(version_json=text) == version
    assert cupy_choice(None, '/usr/local/cuda', text) == {'package': package, 'cuda_version': version, 'problem': None}


def test_version_json_wins_over_an_old_version_txt(fixture_text):
    assert cuda_toolkit_version(fixture_text('cuda', '12.1-version.json'), fixture_text('cuda', '9.0-version.txt')) == '12.1.20230222'


def test_a_toolkit_too_old_for_any_cupy_wheel_names_the_variable(fixture_text):
    choice = cupy_choice(None, '/usr/local/cuda/', version_txt=fixture_text('cuda', '9.0-version.txt'))
    assert choice['package'] is None and choice['cuda_version'] == '9.0.176'
    assert choice['problem'].startswith('CUDA 9.0.176 in /usr/local/cuda: CuPy has wheels for CUDA 11, 12, 13 only')
    assert 'bench_env_cupy_package' in choice['problem']


def test_no_toolkit_names_both_variables():
    problem = cupy_choice(None, '/opt/cuda', None, None)['problem']
    assert '/opt/cuda has neither version.json nor version.txt' in problem
    assert 'bench_env_cuda_home' in problem and 'bench_env_cupy_package' in problem


@pytest.mark.parametrize('text', ['{"cuda_nvcc": {"version": "12.4.131"}}', '{"cuda": {"version": 12}}', 'not json'])
def test_a_version_json_without_the_sdk_version_is_a_problem_not_a_guess(text):
    choice = cupy_choice(None, '/usr/local/cuda', text)
    assert choice['package'] is None and choice['problem'].startswith('cannot tell the CUDA version from /usr/local/cuda')


def test_the_inventory_package_wins_without_reading_the_toolkit():
    assert cupy_choice('cupy-cuda12x==13.6.0', '/usr/local/cuda', 'garbage')['package'] == 'cupy-cuda12x==13.6.0'


# --- which NCCL ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('explicit, cupy, cuda, package', [
    (None, 'cupy-cuda12x', '12.1.20230222', 'nvidia-nccl-cu12'),
    # the inventory named CuPy, so the toolkit was not read: its series tells the CUDA major version
    (None, 'cupy-cuda13x==14.0.1', None, 'nvidia-nccl-cu13'),
    (None, 'cupy-cuda11x', None, 'nvidia-nccl-cu11'),
    ('nvidia-nccl-cu12==2.28.9', 'cupy-cuda12x', '12.4.1', 'nvidia-nccl-cu12==2.28.9'),
])
def test_nccl_follows_the_cuda_major_version_cupy_was_chosen_for(explicit, cupy, cuda, package):
    assert nccl_choice(explicit, cupy, cuda) == {'package': package, 'problem': None}


def test_an_nccl_that_cannot_be_told_names_the_variable():
    problem = nccl_choice(None, 'cupy', None)['problem']
    assert problem.startswith('the nccl engine needs NCCL for the CUDA major version, which bench_env_cupy_package=cupy '
                              'does not tell') and 'bench_env_nccl_package' in problem


def test_the_nccl_engine_adds_nccls_wheel_beside_cupy(fixture_text):
    inputs = base_inputs(device='cuda', version_json=fixture_text('cuda', '12.1-version.json'), probe=debian_probe())
    assert plan(inputs)['packages'] == ['cupy-cuda12x']
    assert plan(dict(inputs, nccl=True))['packages'] == ['cupy-cuda12x', 'nvidia-nccl-cu12']
    assert plan(dict(inputs, nccl=True, nccl_package='nvidia-nccl-cu12==2.30.4'))['packages'] == [
        'cupy-cuda12x', 'nvidia-nccl-cu12==2.30.4']


def test_a_module_that_imports_without_its_library_is_named(tmp_path):
    # cupy.cuda.nccl imports where libnccl.so.2 is missing and says so in its `available`: here a stand-in module
    (tmp_path / 'fake_nccl.py').write_text('available = False\n')
    (tmp_path / 'fake_lib.py').write_text('available = True\n')
    proc = subprocess.run([sys.executable, '-', 'fake_nccl,fake_lib,json'], input=PROBE.read_text(), capture_output=True,
                          text=True, check=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    report = read_report(proc.stdout)
    assert (report['modules']['fake_nccl']['available'], report['modules']['fake_lib']['available']) == (False, True)
    assert 'available' not in report['modules']['json']
    assert problems(proc.stdout, {}) == [
        "the bench Python imports fake_nccl, which finds no library to use (fake_nccl.available is false): for "
        "cupy.cuda.nccl install NVIDIA's NCCL wheel for the CUDA major version (bench_env_nccl_package)"]


# --- settings ------------------------------------------------------------------------------------------------------

SETTINGS = {'bench_env_dir': '/opt/hpcfabric/bench', 'bench_env_device': 'cuda', 'bench_env_nccl': False,
            'bench_env_wheelhouse_src': None, 'bench_env_pip_index_url': None, 'bench_env_cuda_home': '/usr/local/cuda',
            'bench_env_cupy_package': None, 'bench_env_nccl_package': None, 'bench_env_pip_environment': {}}


def test_the_defaults_hold():
    assert settings_problems(SETTINGS) == []


@pytest.mark.parametrize('changes, start', [
    ({'bench_env_wheelhouse_src': '/srv/wheels', 'bench_env_pip_index_url': 'https://m/simple'},
     'bench_env_wheelhouse_src and bench_env_pip_index_url are both set'),
    ({'bench_env_cuda_home': 'cuda'}, "bench_env_cuda_home must be an absolute path, got 'cuda'"),
    ({'bench_env_cupy_package': 'cupy-cuda12x; rm -rf /'}, 'bench_env_cupy_package must be one pip requirement'),
    ({'bench_env_cupy_package': 'https://evil.example/cupy.whl'}, 'bench_env_cupy_package must be one pip requirement'),
    ({'bench_env_nccl_package': 'nvidia-nccl-cu12 --index-url http://x'}, 'bench_env_nccl_package must be one pip requirement'),
    ({'bench_env_pip_environment': {'PIP_TIMEOUT': 60}}, 'bench_env_pip_environment must map variable names to strings'),
])
def test_bad_settings_are_named(changes, start):
    found = settings_problems(dict(SETTINGS, **changes))
    assert len(found) == 1 and found[0].startswith(start)


@pytest.mark.parametrize('package', ['cupy-cuda12x', 'cupy-cuda11x>=13,<14', 'cupy-cuda13x == 14.0.1', 'cupy[all]'])
def test_requirements_pip_takes_are_accepted(package):
    assert settings_problems(dict(SETTINGS, bench_env_cupy_package=package)) == []


# --- the plan, from the import script's real output ----------------------------------------------------------------

def base_inputs(**changes):
    inputs = {'venv': VENV, 'device': 'cpu', 'cupy_package': None, 'cuda_home': '/usr/local/cuda', 'version_json': None,
              'version_txt': None, 'mpi4py_python': sys.executable, 'probe': None, 'probe_error': '', 'pyvenv_cfg': None,
              'tools_problems': []}
    inputs.update(changes)
    return inputs


def test_the_script_reports_this_interpreter_as_it_is():
    report = read_report(run_script(sys.executable, 'json', 'no_such_module_here'))
    assert report['version'][:2] == list(sys.version_info[:2])
    assert (report['prefix'], report['base_prefix']) == (sys.prefix, sys.base_prefix)
    assert report['modules']['json']['file'] == json.__file__
    assert report['modules']['no_such_module_here'] == {'error': "ModuleNotFoundError: No module named 'no_such_module_here'"}


def make_recorded_venv(tmp_path):
    """A venv laid out like the mpi role's <prefix>/mpi4py-venv, with an mpi4py package in its site-packages (a stand-in:
    building the real one needs an MPI)."""
    recorded = tmp_path / 'prefix' / 'mpi4py-venv'
    venv.EnvBuilder(system_site_packages=True, with_pip=False, symlinks=True).create(recorded)
    python = recorded / 'bin' / 'python'
    purelib = read_report(run_script(python))['purelib']
    (Path(purelib) / 'mpi4py').mkdir()
    (Path(purelib) / 'mpi4py' / '__init__.py').write_text("__version__ = '4.0.3'\n")
    return python, purelib


def test_a_bench_venv_built_as_planned_imports_the_recorded_venvs_mpi4py(tmp_path):
    # hpcx and source: the recorded Python is a venv; the bench venv is made from its base and reads it through a .pth
    recorded, purelib = make_recorded_venv(tmp_path)
    bench = tmp_path / 'bench' / 'venv'
    wanted = plan(base_inputs(venv=str(bench), mpi4py_python=str(recorded), probe=run_script(recorded, 'mpi4py')))
    assert wanted['problems'] == [] and wanted['recreate'] is False
    assert wanted['pth'].splitlines()[0] == purelib
    assert wanted['mpi4py'] == os.path.join(purelib, 'mpi4py', '__init__.py')
    subprocess.run([wanted['base_python'], '-m', 'venv', '--system-site-packages', '--without-pip', str(bench)], check=True)
    assert Path(wanted['site_packages']).is_dir()
    (Path(wanted['site_packages']) / PTH_NAME).write_text(wanted['pth'])
    assert problems(run_script(bench / 'bin' / 'python', 'mpi4py'), wanted) == []
    # made again from the same plan, the venv is what the plan wants
    assert plan(base_inputs(venv=str(bench), mpi4py_python=str(recorded), probe=run_script(recorded, 'mpi4py'),
                            pyvenv_cfg=(bench / 'pyvenv.cfg').read_text()))['recreate'] is False
    # without the .pth, the bench venv does not see that mpi4py, and says so
    (Path(wanted['site_packages']) / PTH_NAME).unlink()
    assert problems(run_script(bench / 'bin' / 'python', 'mpi4py'), wanted) == [
        "the bench Python cannot import mpi4py (ModuleNotFoundError: No module named 'mpi4py')"]


def test_a_recorded_python_that_is_no_venv_needs_no_pth():
    # distro: the OS's python3 with python3-mpi4py; here this interpreter with json standing in for mpi4py
    probe = json.loads(run_script(sys.executable, 'json'))
    probe.update(prefix=probe['base_prefix'], modules={'mpi4py': probe['modules']['json']})
    wanted = plan(base_inputs(probe=json.dumps(probe)))
    assert wanted['pth'] == '' and wanted['base_python'].endswith('/bin/python%d.%d' % sys.version_info[:2])
    assert wanted['site_packages'] == '%s/lib/python%d.%d/site-packages' % ((VENV,) + sys.version_info[:2])


def test_an_mpi4py_from_elsewhere_is_named():
    wanted = {'mpi4py': '/opt/hpcx/mpi4py-venv/lib/python3.11/site-packages/mpi4py/__init__.py'}
    seen = json.dumps({'version': [3, 11, 2], 'prefix': VENV, 'base_prefix': '/usr', 'purelib': '', 'platlib': '',
                       'modules': {'mpi4py': {'file': '/usr/lib/python3/dist-packages/mpi4py/__init__.py'},
                                   'numpy': {'file': '/usr/lib/python3/dist-packages/numpy/__init__.py'},
                                   'cupy': {'error': 'ImportError: libcuda.so.1: cannot open shared object file'}}})
    assert problems(seen, wanted) == [
        'the bench Python cannot import cupy (ImportError: libcuda.so.1: cannot open shared object file)',
        'the bench Python imports mpi4py from /usr/lib/python3/dist-packages/mpi4py, not the one built for this MPI '
        '(/opt/hpcx/mpi4py-venv/lib/python3.11/site-packages/mpi4py)']


def debian_probe():
    return json.dumps({'version': [3, 11, 2], 'prefix': '/usr', 'base_prefix': '/usr',
                       'purelib': '/usr/local/lib/python3.11/dist-packages', 'platlib': '/usr/local/lib/python3.11/dist-packages',
                       'modules': {'mpi4py': {'file': '/usr/lib/python3/dist-packages/mpi4py/__init__.py', 'version': '3.1.4'}}})


# pyvenv.cfg as Debian 12's python3 -m venv --system-site-packages writes it
BOOKWORM_CFG = ('home = /usr/bin\ninclude-system-site-packages = true\nversion = 3.11.2\n'
                'executable = /usr/bin/python3.11\ncommand = /usr/bin/python3.11 -m venv --system-site-packages ' + VENV + '\n')


@pytest.mark.parametrize('cfg, recreate', [
    (None, False),
    (BOOKWORM_CFG, False),
    # the OS moved to a new Python (bookworm to trixie): the venv's links point at an interpreter that is gone
    (BOOKWORM_CFG.replace('3.11.2', '3.13.5'), True),
    (BOOKWORM_CFG.replace('= true', '= false'), True),
    (BOOKWORM_CFG.replace('home = /usr/bin', 'home = /opt/python/bin'), True),
])
def test_a_venv_from_another_interpreter_is_made_again(cfg, recreate):
    assert plan(base_inputs(probe=debian_probe(), pyvenv_cfg=cfg))['recreate'] is recreate


def test_cuda_adds_cupy_and_a_node_without_a_toolkit_stops(fixture_text):
    wanted = plan(base_inputs(device='cuda', version_json=fixture_text('cuda', '12.1-version.json'), probe=debian_probe()))
    assert (wanted['packages'], wanted['cuda_version'], wanted['problems']) == (['cupy-cuda12x'], '12.1.20230222', [])
    stopped = plan(base_inputs(device='cuda', probe=debian_probe()))
    assert stopped['packages'] == [] and 'bench_env_cupy_package' in stopped['problems'][0]


def test_a_recorded_python_that_cannot_import_mpi4py_or_run_is_named():
    probe = json.loads(debian_probe())
    probe['modules']['mpi4py'] = {'error': "ModuleNotFoundError: No module named 'mpi4py'"}
    found = plan(base_inputs(mpi4py_python='/usr/bin/python3', probe=json.dumps(probe)))['problems']
    assert found == ["/usr/bin/python3, the Python the mpi role recorded for this MPI, cannot import mpi4py "
                     "(ModuleNotFoundError: No module named 'mpi4py'): run the hpcfabric.cluster.mpi role again, or set validate_python"]
    gone = plan(base_inputs(mpi4py_python='/opt/x/bin/python', probe_error='[Errno 2] No such file or directory'))
    assert gone['problems'] == ['/opt/x/bin/python, the Python recorded for this MPI, does not run: [Errno 2] No such file or directory']


def test_without_an_mpi_the_tools_problems_stand_alone():
    found = plan(base_inputs(mpi4py_python=None, tools_problems=['no MPI install recorded']))['problems']
    assert found == ['no MPI install recorded']


def test_pyvenv_cfg_is_read_as_written():
    assert pyvenv_cfg(BOOKWORM_CFG)['include-system-site-packages'] == 'true'
