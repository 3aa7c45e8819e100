# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""`make gpu-proof-bundle`: everything `make gpu-proof` needs that an offline GPU node cannot download or build.

Run on a machine with network access (PyPI); carry the folder to the GPU node with the checkout:

    python tests/gpu/bundle.py [--dest .cache/gpu-proof-bundle] [--python-version 3.12] [--mpi-package PATH]

The folder holds
- mpi/: the CUDA-aware UCX and Open MPI as the mpi role's `source` flavour packs them: a tarball of the build's
  prefix (`molecule test -s mpi_cuda` builds one in the lab against Debian's CUDA toolkit and leaves it in
  .cache/mpi-packages/; a site's build host leaves one in `mpi_source_package_dir`). The proof installs it with the
  role's `mpi_source_package_src`, so the GPU node compiles nothing. The CUDA runtime its UCX links (libcudart, which
  a driver-only node lacks) is added to the package's lib/ from NVIDIA's nvidia-cuda-runtime wheel of the same CUDA
  major version; the libraries left to the node (the C library, libnuma, the driver's libcuda and NVML, ...) are
  listed in the manifest, and the node's preflight checks that it has them;
- wheels/: ansible-core and its dependencies, pip and nvidia-ml-py, for a virtualenv of the GPU Python that runs the
  proof's playbook (nvidia-ml-py lets gpu_topology_facts read NVML);
- wheelhouse/: mpi4py's binary wheel for the GPU Python (mpi_mpi4py_binary: it loads the package's libmpi);
- manifest.json: versions, origins and the sha256 of every file, which the node checks before it starts.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from preflight import MANIFEST, bundle_problems, sha256_of  # noqa: E402  pylint: disable=wrong-import-position

# where molecule's mpi_cuda scenario leaves the package of its CUDA-aware build (its mpi_source_package_dir)
DEFAULT_PACKAGES = '.cache/mpi-packages/openmpi-*-cuda-*.tar.gz'
# the CUDA runtime of each major version, as NVIDIA publishes it on PyPI: the release of Debian's toolkit for 11
CUDA_RUNTIME_WHEELS = {'11': 'nvidia-cuda-runtime-cu11==11.8.89', '12': 'nvidia-cuda-runtime-cu12==12.4.127'}
CUDA_RUNTIME_RE = re.compile(r'^libcudart[.]so[.]([0-9]+)')
# what the NVIDIA driver installs: a GPU node has them, whatever its OS
DRIVER_LIBRARIES = ('libcuda.so.1', 'libnvidia-ml.so.1')
# the files whose libraries must all load for the proof: the launcher and the tools it runs, Open MPI's and UCX's
# core libraries, UCX's CUDA transport; the plugins (verbs, rdmacm, Open MPI's openib and its libmca_common_verbs)
# only load where the node has what they use, and the other programs (ucx_perftest, the compiler wrappers) do not run
REQUIRED_RE = re.compile(r'^(bin/(mpirun|mpiexec|orterun|orted|prterun|prted|ompi_info|ucx_info)'
                         r'|lib/lib(mpi|open-pal|open-rte|pmix|prrte|ucp|uct|ucs|ucm)[.][^/]*'
                         r'|lib/ucx/libuct_cuda[^/]*)$')
ELF_MAGIC = b'\x7fELF'
# the Ansible the proof runs: the version this checkout is tested with (requirements-dev.txt pins the same)
ANSIBLE_CORE = 'ansible-core==2.21.5'
MPI4PY = 'mpi4py==4.1.2'
# pip itself (run from its wheel, so the node needs no ensurepip for the Ansible venv) and NVML's Python binding
VENV_EXTRA = ['pip', 'nvidia-ml-py']
PLATFORMS = ['manylinux2014_x86_64', 'manylinux_2_17_x86_64', 'manylinux_2_28_x86_64']
# the GPU node receives the checkout and this folder in one transfer of 64 MiB: leave room for the checkout
SIZE_LIMIT_MIB = 50


def say(text):
    print('gpu-proof-bundle: %s' % text, flush=True)


def newest_package(pattern):
    """The newest file matching ``pattern``, or SystemExit saying how to make one."""
    found = sorted(glob.glob(pattern), key=os.path.getmtime)
    if not found:
        raise SystemExit('gpu-proof-bundle: no CUDA-aware package of the mpi role\'s source build matches %s: run '
                         '`PATH=$PWD/.venv/bin:$PATH molecule test -s mpi_cuda` (it leaves one there) or give '
                         '--mpi-package' % pattern)
    return found[-1]


def needed_libraries(path):
    """The NEEDED entries of one ELF file (readelf -d), [] for a file without a dynamic section."""
    proc = subprocess.run(['readelf', '-d', path], capture_output=True, text=True, check=False)
    return re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', proc.stdout)


def file_names(tree):
    """The name of every file and link under ``tree``: the sonames the package provides itself."""
    return set(name for _top, _dirs, names in os.walk(tree) for name in names)


def elf_files(tree):
    """Every ELF file under ``tree``, as a path relative to it (links are not followed)."""
    found = []
    for top, _dirs, names in os.walk(tree):
        for name in names:
            path = os.path.join(top, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, 'rb') as handle:
                if handle.read(4) == ELF_MAGIC:
                    found.append(os.path.relpath(path, tree))
    return sorted(found)


def classify(needed_by, provided):
    """Sort what the package's files need that it does not hold itself.

    ``needed_by`` maps each file (relative to the prefix) to its NEEDED sonames, ``provided`` is the set of file
    names the package holds. Returns {'cuda_runtime': [sonames], 'driver': [...], 'required': [...],
    'optional': [...]}: required are the system libraries of the tools, the top-level libraries and UCX's CUDA
    transport; optional those only other plugins need.
    """
    out = {'cuda_runtime': set(), 'driver': set(), 'required': set(), 'optional': set()}
    for path, sonames in needed_by.items():
        for soname in sonames:
            if soname in provided:
                continue
            if CUDA_RUNTIME_RE.match(soname):
                out['cuda_runtime'].add(soname)
            elif soname in DRIVER_LIBRARIES:
                out['driver'].add(soname)
            elif REQUIRED_RE.match(path):
                out['required'].add(soname)
            else:
                out['optional'].add(soname)
    out['optional'] -= out['required']
    return dict((key, sorted(value)) for key, value in out.items())


def pip_download(python, dest, requirements, python_version, no_deps=False):
    argv = [python, '-m', 'pip', 'download', '--quiet', '--dest', dest, '--only-binary=:all:',
            '--python-version', python_version, '--implementation', 'cp']
    for platform in PLATFORMS:
        argv += ['--platform', platform]
    if no_deps:
        argv.append('--no-deps')
    proc = subprocess.run(argv + requirements, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit('gpu-proof-bundle: pip download %s failed: %s' % (
            ' '.join(requirements), ' / '.join(proc.stderr.strip().splitlines()[-3:])))


def add_cuda_runtime(tree, soname, work, python, python_version):
    """Put ``soname`` (libcudart.so.N) from NVIDIA's runtime wheel of CUDA N into the prefix's lib/; its origin."""
    major = CUDA_RUNTIME_RE.match(soname).group(1)
    if major not in CUDA_RUNTIME_WHEELS:
        raise SystemExit('gpu-proof-bundle: the package links %s; this tool knows the runtime wheels of CUDA %s only'
                         % (soname, ', '.join(sorted(CUDA_RUNTIME_WHEELS))))
    wheels = os.path.join(work, 'cuda-runtime')
    pip_download(python, wheels, [CUDA_RUNTIME_WHEELS[major]], python_version, no_deps=True)
    wheel = glob.glob(os.path.join(wheels, '*.whl'))[0]
    with zipfile.ZipFile(wheel) as archive:
        member = next((name for name in archive.namelist() if os.path.basename(name) == soname), None)
        if member is None:
            raise SystemExit('gpu-proof-bundle: %s holds no %s' % (os.path.basename(wheel), soname))
        with archive.open(member) as source, open(os.path.join(tree, 'lib', soname), 'wb') as target:
            shutil.copyfileobj(source, target)
    os.chmod(os.path.join(tree, 'lib', soname), 0o755)
    return {'soname': soname, 'wheel': os.path.basename(wheel), 'member': member}


def _reset_owner(info):
    info.uid = info.gid = 0
    info.uname = info.gname = 'root'
    return info


def prepare_package(package, dest, work, python, python_version):
    """Unpack the role's package, add the CUDA runtime it links, pack it again into ``dest``; what the manifest says."""
    with tarfile.open(package) as archive:
        tops = {member.name.split('/')[0] for member in archive.getmembers()}
        if len(tops) != 1:
            raise SystemExit('gpu-proof-bundle: %s has %d top directories; the mpi role packs one' % (package, len(tops)))
        archive.extractall(work)  # nosec B202 - the role's own package, made by this checkout's role
    top = tops.pop()
    tree = os.path.join(work, top)
    try:
        with open(os.path.join(tree, '.hpcfabric-mpi.json')) as handle:
            build = json.load(handle)
        versions = {'ompi': build['ompi']['version'], 'ucx': build['ucx']['version']}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit('gpu-proof-bundle: %s is not a package of the mpi role\'s source build (%s)' % (package, exc)) from None
    if not any(flag.startswith('--with-cuda=') for flag in build['ucx'].get('configure', [])):
        raise SystemExit('gpu-proof-bundle: %s was built without CUDA (UCX configure %s)' % (
            package, ' '.join(build['ucx'].get('configure', []))))
    files = elf_files(tree)
    needs = classify(dict((path, needed_libraries(os.path.join(tree, path))) for path in files), file_names(tree))
    runtimes = [add_cuda_runtime(tree, soname, work, python, python_version) for soname in needs['cuda_runtime']]
    name = os.path.basename(package)
    with tarfile.open(os.path.join(dest, name), 'w:gz') as archive:
        archive.add(tree, arcname=top, filter=_reset_owner)
    return {'file': 'mpi/' + name, 'origin': os.path.abspath(package), 'origin_sha256': sha256_of(package),
            'versions': versions, 'build': build, 'cuda_runtime': runtimes, 'driver_libraries': needs['driver'],
            'system_libraries': {'required': needs['required'], 'optional': needs['optional']}}


def build(dest, python_version, package, python=sys.executable):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    for sub in ('mpi', 'wheels', 'wheelhouse'):
        os.makedirs(os.path.join(dest, sub))
    with tempfile.TemporaryDirectory() as work:
        say('adding the CUDA runtime to %s' % package)
        mpi = prepare_package(package, os.path.join(dest, 'mpi'), work, python, python_version)
    say('downloading %s and its dependencies, pip, nvidia-ml-py for Python %s' % (ANSIBLE_CORE, python_version))
    pip_download(python, os.path.join(dest, 'wheels'), [ANSIBLE_CORE] + VENV_EXTRA, python_version)
    say('downloading the %s wheel' % MPI4PY)
    pip_download(python, os.path.join(dest, 'wheelhouse'), [MPI4PY], python_version, no_deps=True)
    files = {}
    for sub in ('mpi', 'wheels', 'wheelhouse'):
        for name in sorted(os.listdir(os.path.join(dest, sub))):
            path = os.path.join(dest, sub, name)
            files['%s/%s' % (sub, name)] = {'sha256': sha256_of(path), 'bytes': os.path.getsize(path)}
    manifest = {
        'created': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
        'python_version': python_version,
        'ansible_core': ANSIBLE_CORE.split('==')[1],
        'mpi4py': MPI4PY.split('==')[1],
        'mpi_package': mpi,
        'files': files,
    }
    with open(os.path.join(dest, MANIFEST), 'w') as handle:
        json.dump(manifest, handle, indent=2, sort_keys=True)
        handle.write('\n')
    problems = bundle_problems(dest, python_version)
    if problems:
        raise SystemExit('gpu-proof-bundle: the new bundle does not check out: %s' % '; '.join(problems))
    return manifest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--dest', default=os.environ.get('GPU_PROOF_BUNDLE', '.cache/gpu-proof-bundle'))
    parser.add_argument('--python-version', default=os.environ.get('GPU_PROOF_PYVER', '3.12'),
                        help="the GPU Python's X.Y, for the wheels (default 3.12)")
    parser.add_argument('--mpi-package', help='the CUDA-aware package of the mpi role\'s source build (default: the '
                                              'newest of %s)' % DEFAULT_PACKAGES)
    args = parser.parse_args(argv)
    if not re.match(r'^3[.][0-9]+$', args.python_version):
        parser.error('--python-version must be X.Y, e.g. 3.12, got %r' % args.python_version)
    if args.mpi_package and not os.path.isfile(args.mpi_package):
        parser.error('--mpi-package %s is not a file' % args.mpi_package)
    package = args.mpi_package or newest_package(DEFAULT_PACKAGES)
    manifest = build(os.path.abspath(args.dest), args.python_version, package)
    total = sum(entry['bytes'] for entry in manifest['files'].values())
    for name in sorted(manifest['files']):
        say('  %-70s %8.1f KiB' % (name, manifest['files'][name]['bytes'] / 1024))
    mpi = manifest['mpi_package']
    say('%s: %d files, %.1f MiB (Open MPI %s, UCX %s, CUDA runtime %s, ansible-core %s, mpi4py %s, Python %s)' % (
        args.dest, len(manifest['files']), total / 2 ** 20, mpi['versions']['ompi'], mpi['versions']['ucx'],
        ', '.join(r['soname'] for r in mpi['cuda_runtime']) or 'none', manifest['ansible_core'], manifest['mpi4py'],
        args.python_version))
    if total > SIZE_LIMIT_MIB * 2 ** 20:
        raise SystemExit('gpu-proof-bundle: %.1f MiB is over %d MiB: the checkout and the bundle travel together '
                         'in 64 MiB' % (total / 2 ** 20, SIZE_LIMIT_MIB))
    return 0


if __name__ == '__main__':
    sys.exit(main())
