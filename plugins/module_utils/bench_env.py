# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The bench_env role's venv: the Python the validation's jobs run on every node (the bench_env filters).

A virtualenv at the same path on every node (one mpirun starts the launcher's interpreter path everywhere), made
with ``--system-site-packages`` from the base interpreter of the Python the mpi role recorded for its MPI
(``ansible_local.hpcfabric_mpi.python``):

- ``distro``: that Python is the OS's ``python3`` with the OS's mpi4py and NumPy, which the venv sees as they are;
  with ``--device cpu`` nothing is downloaded.
- ``hpcx``/``source``: that Python is the mpi role's venv in the MPI prefix, whose mpi4py was built with the
  prefix's mpicc. A venv cannot inherit another venv's packages, so the bench venv names that venv's site-packages
  in a ``.pth`` file: it runs the mpi4py the mpi role built and verified (nothing compiled twice), and follows the
  fact when the MPI moves to a new prefix.
- ``--device cuda`` adds CuPy for the node's CUDA major version (``cupy-cuda11x``, ``12x``, ``13x``), read from the
  CUDA toolkit's ``version.json`` (``version.txt`` before CUDA 11.1), unless the inventory names the package; and,
  where the ``nccl`` engine runs (``bench_env_nccl``), NCCL's wheel for the same major version (``nvidia-nccl-cu12``, ...),
  which CuPy's NCCL bindings load (CuPy 13+), unless the inventory names that one too.

What runs on the node to learn the interpreters' layout and imports is the role's ``files/import_probe.py``;
``read_report`` reads what it prints.
"""
from __future__ import annotations

import json
import posixpath
import re

# CuPy publishes one wheel series per CUDA major version; CUDA 10 and older have none any more
CUPY_BY_CUDA_MAJOR = {11: 'cupy-cuda11x', 12: 'cupy-cuda12x', 13: 'cupy-cuda13x'}
# NVIDIA's NCCL wheels, one series per CUDA major version; CuPy's NCCL bindings load libnccl.so.2 from them
NCCL_BY_CUDA_MAJOR = {11: 'nvidia-nccl-cu11', 12: 'nvidia-nccl-cu12', 13: 'nvidia-nccl-cu13'}
_CUPY_SERIES_RE = re.compile(r'^cupy-cuda(\d+)x\b')
PTH_NAME = 'hpcfabric-mpi4py.pth'
_TXT_RE = re.compile(r'^CUDA Version\s+([0-9]+(?:\.[0-9]+)*)\s*$', re.MULTILINE)
_VERSION_RE = re.compile(r'^([0-9]+)\.[0-9]+')
# a PEP 508 name, optional extras and version clauses: what pip takes as one requirement (no URL, no marker)
_REQUIREMENT_RE = re.compile(
    r'^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9._,-]+\])?'
    r'(?:\s*(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+(?:\s*,\s*(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+)*)?$')


def cuda_toolkit_version(version_json=None, version_txt=None):
    """The CUDA toolkit's version (``'12.4.1'``) from its ``version.json`` (CUDA 11.1 on: ``{"cuda": {"name": "CUDA
    SDK", "version": "12.4.1"}, ...}``) or, without one, its ``version.txt`` (up to CUDA 11.0: ``CUDA Version
    10.2.89``); None when neither text is given. ValueError for a file that holds no version."""
    if version_json:
        try:
            version = json.loads(version_json)['cuda']['version']
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError('version.json has no "cuda": {"version": ...} (%s: %s)' % (type(exc).__name__, exc)) from None
        if not isinstance(version, str) or not _VERSION_RE.match(version):
            raise ValueError('version.json gives the CUDA version as %r, not as major.minor' % (version,))
        return version
    if version_txt:
        found = _TXT_RE.search(version_txt)
        if not found:
            raise ValueError('version.txt has no "CUDA Version X.Y" line: %r' % version_txt.strip()[:80])
        return found.group(1)
    return None


def cupy_choice(explicit, cuda_home, version_json=None, version_txt=None):
    """Which CuPy to install: ``{package, cuda_version, problem}``. ``explicit`` (bench_env_cupy_package) wins;
    otherwise the series for the major version of the toolkit in ``cuda_home``. ``problem`` says, naming the
    variables, why no package could be chosen."""
    if explicit:
        return {'package': explicit, 'cuda_version': None, 'problem': None}
    home = (cuda_home or '').rstrip('/') or '/'
    try:
        version = cuda_toolkit_version(version_json, version_txt)
    except ValueError as exc:
        return {'package': None, 'cuda_version': None,
                'problem': 'cannot tell the CUDA version from %s: %s; set bench_env_cupy_package (e.g. cupy-cuda12x)' % (home, exc)}
    if version is None:
        return {'package': None, 'cuda_version': None,
                'problem': ('bench_env_device cuda needs CuPy for the CUDA major version, but %s has neither version.json '
                            'nor version.txt: set bench_env_cuda_home to the CUDA toolkit, or bench_env_cupy_package '
                            '(e.g. cupy-cuda12x)' % home)}
    major = int(_VERSION_RE.match(version).group(1))
    if major not in CUPY_BY_CUDA_MAJOR:
        return {'package': None, 'cuda_version': version,
                'problem': ('CUDA %s in %s: CuPy has wheels for CUDA %s only; set bench_env_cupy_package to a CuPy that '
                            'supports it' % (version, home, ', '.join(str(m) for m in sorted(CUPY_BY_CUDA_MAJOR))))}
    return {'package': CUPY_BY_CUDA_MAJOR[major], 'cuda_version': version, 'problem': None}


def nccl_choice(explicit, cupy_package, cuda_version):
    """Which NCCL to install beside CuPy: ``{package, problem}``. ``explicit`` (bench_env_nccl_package) wins; otherwise
    the series for the CUDA major version of the toolkit (``cuda_version``), else of the CuPy series named in
    ``cupy_package`` (``cupy-cuda12x``); ``problem`` names the variable when neither tells."""
    if explicit:
        return {'package': explicit, 'problem': None}
    major = None
    if cuda_version and _VERSION_RE.match(cuda_version):
        major = int(_VERSION_RE.match(cuda_version).group(1))
    elif cupy_package and _CUPY_SERIES_RE.match(cupy_package):
        major = int(_CUPY_SERIES_RE.match(cupy_package).group(1))
    if major not in NCCL_BY_CUDA_MAJOR:
        return {'package': None,
                'problem': ('the nccl engine needs NCCL for the CUDA major version, which %s does not tell: set '
                            'bench_env_nccl_package (e.g. nvidia-nccl-cu12)' % (
                                'CUDA %s' % cuda_version if cuda_version else 'bench_env_cupy_package=%s' % cupy_package))}
    return {'package': NCCL_BY_CUDA_MAJOR[major], 'problem': None}


def read_report(stdout):
    """What ``files/import_probe.py`` printed (its last line): ``{version, prefix, base_prefix, purelib, platlib,
    modules: {name: {file, version} | {error}}}``. ValueError when it is not that."""
    lines = (stdout or '').strip().splitlines()
    try:
        report = json.loads(lines[-1])
    except (IndexError, ValueError):
        raise ValueError('the interpreter printed no report: %r' % (stdout or '')[-200:]) from None
    if not isinstance(report, dict) or not all(k in report for k in ('version', 'prefix', 'base_prefix', 'purelib', 'modules')):
        raise ValueError('the interpreter printed %r, not a report' % lines[-1][:200])
    return report


def pyvenv_cfg(text):
    """``pyvenv.cfg`` as a dict (``home``, ``include-system-site-packages``, ``version``, ...)."""
    cfg = {}
    for line in (text or '').splitlines():
        key, sep, value = line.partition('=')
        if sep:
            cfg[key.strip().lower()] = value.strip()
    return cfg


def _venv_matches(cfg, home, version):
    seen = cfg.get('version') or cfg.get('version_info') or ''
    return (cfg.get('home', '').rstrip('/') == home and cfg.get('include-system-site-packages', '').lower() == 'true'
            and seen.split('.')[:2] == version.split('.'))


def settings_problems(settings):
    """What is wrong with the bench_env role's settings (its variables by name), one line each naming the variable."""
    problems = []
    if settings.get('bench_env_wheelhouse_src') and settings.get('bench_env_pip_index_url'):
        problems.append('bench_env_wheelhouse_src and bench_env_pip_index_url are both set: with a wheelhouse pip reads '
                        'no index; set one')
    value = settings.get('bench_env_cuda_home')
    if value is not None and (not isinstance(value, str) or not value.startswith('/')):
        problems.append('bench_env_cuda_home must be an absolute path, got %r' % (value,))
    for name, example in (('bench_env_cupy_package', 'cupy-cuda12x or cupy-cuda12x==13.6.0'),
                          ('bench_env_nccl_package', 'nvidia-nccl-cu12 or nvidia-nccl-cu12==2.28.9')):
        package = settings.get(name)
        if package is not None and (not isinstance(package, str) or not _REQUIREMENT_RE.match(package)):
            problems.append('%s must be one pip requirement (a name and optional version clauses, e.g. %s), got %r'
                            % (name, example, package))
    environment = settings.get('bench_env_pip_environment')
    if not isinstance(environment, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in environment.items()):
        # the values are not shown: they may hold a proxy's password
        problems.append('bench_env_pip_environment must map variable names to strings (quote numbers)')
    return problems


def plan(inputs):
    """What the bench environment of one node is to be, from what the role read there.

    ``inputs``: ``venv`` (its directory), ``device``, ``cupy_package``, ``nccl`` (the nccl engine runs),
    ``nccl_package``, ``cuda_home``, ``version_json`` and
    ``version_txt`` (the toolkit's files' text, or null), ``mpi4py_python`` (the recorded interpreter),
    ``probe`` (what the import script printed when run by it, or null when it did not run: ``probe_error`` says
    why), ``pyvenv_cfg`` (the venv's, or null when
    there is no venv yet), ``tools_problems`` (what stops the MPI from being used at all).

    Returns ``{base_python, version, site_packages, pth, mpi4py, packages, cuda_version, recreate, problems}``:
    ``pth`` is the text of the venv's .pth file ('' for none), ``mpi4py`` the module file the venv must import,
    ``recreate`` whether an existing venv was made from another interpreter or Python version.
    """
    venv = inputs['venv'].rstrip('/')
    result = {'base_python': None, 'version': None, 'site_packages': None, 'pth': '', 'mpi4py': None, 'packages': [],
              'cuda_version': None, 'recreate': False, 'problems': list(inputs.get('tools_problems') or [])}
    if inputs.get('device') == 'cuda':
        choice = cupy_choice(inputs.get('cupy_package'), inputs.get('cuda_home'), inputs.get('version_json'), inputs.get('version_txt'))
        result['cuda_version'] = choice['cuda_version']
        if choice['problem']:
            result['problems'].append(choice['problem'])
        else:
            result['packages'].append(choice['package'])
            if inputs.get('nccl'):
                nccl = nccl_choice(inputs.get('nccl_package'), choice['package'], choice['cuda_version'])
                if nccl['problem']:
                    result['problems'].append(nccl['problem'])
                else:
                    result['packages'].append(nccl['package'])
    python = inputs.get('mpi4py_python')
    if inputs.get('probe') is None:
        if not inputs.get('tools_problems'):
            result['problems'].append('%s, the Python recorded for this MPI, does not run: %s'
                                      % (python, inputs.get('probe_error') or 'no message'))
        return result
    try:
        probe = read_report(inputs['probe'])
    except ValueError as exc:
        result['problems'].append('%s, the Python recorded for this MPI: %s' % (python, exc))
        return result
    mpi4py = probe['modules'].get('mpi4py') or {'error': 'not asked for'}
    if 'error' in mpi4py:
        result['problems'].append('%s, the Python the mpi role recorded for this MPI, cannot import mpi4py (%s): run the '
                                  'hpcfabric.cluster.mpi role again, or set validate_python' % (python, mpi4py['error']))
        return result
    version = '%d.%d' % tuple(probe['version'][:2])
    base_prefix = probe['base_prefix'].rstrip('/') or '/'
    lib_dirs = []
    if probe['prefix'] != probe['base_prefix']:
        # the recorded Python is a venv: the bench venv reads its packages through a .pth file
        for key in ('purelib', 'platlib'):
            if probe.get(key) and probe[key] not in lib_dirs:
                lib_dirs.append(probe[key])
    base_python = posixpath.join(base_prefix, 'bin', 'python' + version)
    cfg = inputs.get('pyvenv_cfg')
    result.update(base_python=base_python, version=version, mpi4py=mpi4py['file'],
                  site_packages='%s/lib/python%s/site-packages' % (venv, version),
                  pth=''.join(d + '\n' for d in lib_dirs),
                  recreate=cfg is not None and not _venv_matches(pyvenv_cfg(cfg), posixpath.dirname(base_python), version))
    return result


def problems(stdout, wanted):
    """What is wrong with the bench venv as built: import_probe.py's report (run by the venv's Python on mpi4py,
    numpy and the packages installed) against ``wanted``, the plan. One line each."""
    try:
        report = read_report(stdout)
    except ValueError as exc:
        return ['the bench Python: %s' % exc]
    found = []
    for name, module in sorted(report['modules'].items()):
        if 'error' in module:
            found.append('the bench Python cannot import %s (%s)' % (name, module['error']))
        elif module.get('available') is False:
            # a module that imports without its library: CuPy's NCCL bindings without libnccl.so.2
            found.append('the bench Python imports %s, which finds no library to use (%s.available is false): for '
                         'cupy.cuda.nccl install NVIDIA\'s NCCL wheel for the CUDA major version (bench_env_nccl_package)'
                         % (name, name))
    mpi4py = report['modules'].get('mpi4py', {})
    if wanted.get('mpi4py') and mpi4py.get('file') and mpi4py['file'] != wanted['mpi4py']:
        found.append('the bench Python imports mpi4py from %s, not the one built for this MPI (%s)'
                     % (posixpath.dirname(mpi4py['file']), posixpath.dirname(wanted['mpi4py'])))
    return found
