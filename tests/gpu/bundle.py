# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""`make gpu-proof-bundle`: everything `make gpu-proof` needs that an offline GPU node cannot download.

Run on a machine with network access (Debian's archive and PyPI); carry the folder to the GPU node with the checkout:

    python tests/gpu/bundle.py [--dest .cache/gpu-proof-bundle] [--python-version 3.12]

The folder holds
- sources/: the UCX and Open MPI source tarballs, each checked against a pinned sha256 (for Debian's orig tarballs
  the one in the source package's .dsc). UCX from a git snapshot (no configure) is made configure-ready here:
  empty placeholders for the debian/*.in templates its configure.ac lists, autogen.sh, repacked - so the node needs
  no autotools and the mpi role skips its autogen step;
- wheels/: ansible-core and its dependencies, pip and nvidia-ml-py, for a virtualenv of the GPU Python that runs
  the proof's playbook (nvidia-ml-py lets gpu_topology_facts read NVML);
- wheelhouse/: the mpi4py sdist and its build requirements, for the mpi role's offline build
  (mpi_mpi4py_wheelhouse_src);
- manifest.json: versions, origins and the sha256 of every file, which the node checks before it starts.

Other tarballs (a UCX release with CUDA 13 support from github.com/openucx/ucx/releases, say) replace the defaults
with --ucx/--ucx-sha256 and --ompi/--ompi-sha256 (a local path or a URL).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from preflight import MANIFEST, bundle_problems, sha256_of  # noqa: E402  pylint: disable=wrong-import-position

DEBIAN_POOL = 'http://deb.debian.org/debian/pool/main/'
# The sources this workplace can reach. Open MPI 5.0.7: trixie's orig tarball, an upstream release (configure,
# bundled PMIx/PRRTE/hwloc/libevent); sha256 from openmpi_5.0.7-1.dsc. UCX: trixie's 1.18.1+ds orig is not on the
# mirror reachable here, bookworm's 1.13.1 is: a git snapshot (no configure); sha256 from ucx_1.13.1-1.dsc.
# docs/gpu_proof.md says what that means for CUDA 13 and how to bring a newer UCX.
DEFAULT_SOURCES = {
    'ucx': {'url': DEBIAN_POOL + 'u/ucx/ucx_1.13.1.orig.tar.xz', 'dsc': DEBIAN_POOL + 'u/ucx/ucx_1.13.1-1.dsc',
            'sha256': '1a88e09ca1b406c046a469c2ae271d2c330050b5664c0bcd9890e26c6ef09f3c'},
    'ompi': {'url': DEBIAN_POOL + 'o/openmpi/openmpi_5.0.7.orig.tar.xz', 'dsc': DEBIAN_POOL + 'o/openmpi/openmpi_5.0.7-1.dsc',
             'sha256': '97f10c04e9b9a1771db3fd005009e4c07afa3ce739f940e41eb0fc7397cb9473'},
}
# the Ansible the proof runs: the version this checkout is tested with (requirements-dev.txt pins the same)
ANSIBLE_CORE = 'ansible-core==2.21.5'
MPI4PY = 'mpi4py==4.1.2'
# pip's isolated build of the mpi4py sdist: its build-system requirements, as wheels
MPI4PY_BUILD = ['setuptools>=42', 'build', 'cython>=3.0.1']
# pip itself (run from its wheel, so the node needs no ensurepip for the Ansible venv) and NVML's Python binding
VENV_EXTRA = ['pip', 'nvidia-ml-py']
PLATFORMS = ['manylinux2014_x86_64', 'manylinux_2_17_x86_64', 'manylinux_2_28_x86_64']
# `make` in UCX builds its test programs (test/apps, never installed) beside the library. UCX 1.13's predate gcc 13
# and CUDA 13: the sockaddr app lacks <cstdint> and test_cuda_hook.c calls the CUDA 12 cuCtxCreate, both hard errors
# on Ubuntu 24.04 with CUDA 13.0 (met by the first `make gpu-proof` runs). The snapshot is repacked without them; the
# library, the tools (ucx_info, ucx_perftest) and the CUDA transports are built as released.
UCX_TEST_APPS_SUBDIR = '\ttest/apps \\\n'
# configure.ac of UCX lists these packaging templates among its outputs; Debian's orig tarball drops debian/
UCX_DEBIAN_PLACEHOLDERS = ['rules.in', 'control.in', 'changelog.in', 'compat', 'copyright', 'ucx.prerm']
VERSION_RE = re.compile(r'[0-9]+[.][0-9]+(?:[.][0-9]+)?(?:(?:a|b|rc)[0-9]+)?')
# the GPU node receives the checkout and this folder in one transfer of 64 MiB: leave room for the checkout
SIZE_LIMIT_MIB = 50


def say(text):
    print('gpu-proof-bundle: %s' % text, flush=True)


def fetch(source, dest):
    """Copy or download ``source`` (a path or an http(s) URL) to ``dest``."""
    if re.match(r'^https?://', source):
        with urllib.request.urlopen(source, timeout=120) as response, open(dest, 'wb') as out:  # nosec B310 - http(s) only
            shutil.copyfileobj(response, out)
    else:
        shutil.copyfile(source, dest)


def dsc_sha256(text, name):
    """The sha256 a Debian .dsc gives for ``name`` (its Checksums-Sha256 field), or None."""
    match = re.search(r'^ ([0-9a-f]{64}) [0-9]+ %s$' % re.escape(name), text, re.MULTILINE)
    return match.group(1) if match else None


def get_tarball(spec, work):
    """Fetch one tarball and check it; returns its local path."""
    name = os.path.basename(spec['url'])
    path = os.path.join(work, name)
    fetch(spec['url'], path)
    got = sha256_of(path)
    if got != spec['sha256']:
        raise SystemExit('gpu-proof-bundle: %s has sha256 %s, expected %s' % (spec['url'], got, spec['sha256']))
    if spec.get('dsc'):
        with urllib.request.urlopen(spec['dsc'], timeout=60) as response:  # nosec B310 - the pinned http URL above
            listed = dsc_sha256(response.read().decode('utf-8', 'replace'), name)
        if listed != spec['sha256']:
            raise SystemExit('gpu-proof-bundle: %s lists sha256 %s for %s, pinned %s' % (spec['dsc'], listed, name, spec['sha256']))
    return path


def top_directory(path):
    with tarfile.open(path) as archive:
        tops = {member.name.split('/')[0] for member in archive.getmembers()}
    if len(tops) != 1:
        raise SystemExit('gpu-proof-bundle: %s has %d top directories, expected one' % (path, len(tops)))
    return tops.pop()


def configure_ready_ucx(tarball, version, work, dest):
    """A UCX tarball with configure: as it is when it has one, else autogen.sh run here and repacked."""
    top = top_directory(tarball)
    with tarfile.open(tarball) as archive:
        if any(member.name == top + '/configure' for member in archive.getmembers()):
            shutil.copyfile(tarball, os.path.join(dest, os.path.basename(tarball)))
            return os.path.basename(tarball), 'release tarball (has configure)'
        archive.extractall(work)  # nosec B202 - a tarball whose checksum was checked above
    tree = os.path.join(work, top)
    debian = os.path.join(tree, 'debian')
    os.makedirs(debian, exist_ok=True)
    for name in UCX_DEBIAN_PLACEHOLDERS:
        if not os.path.exists(os.path.join(debian, name)):
            open(os.path.join(debian, name), 'w').close()
    drop_test_apps(os.path.join(tree, 'Makefile.am'))
    for tool in ('autoreconf', 'libtoolize'):
        if shutil.which(tool) is None:
            raise SystemExit('gpu-proof-bundle: %s is missing: the UCX snapshot needs the autotools here '
                             '(Debian: apt-get install autoconf automake libtool)' % tool)
    proc = subprocess.run(['./autogen.sh'], cwd=tree, capture_output=True, text=True, check=False)
    if proc.returncode or not os.path.exists(os.path.join(tree, 'configure')):
        raise SystemExit('gpu-proof-bundle: autogen.sh in %s failed (exit %d): %s' % (
            tree, proc.returncode, ' / '.join((proc.stdout + proc.stderr).strip().splitlines()[-5:])))
    shutil.rmtree(os.path.join(tree, 'autom4te.cache'), ignore_errors=True)
    name = 'ucx-%s.tar.gz' % version
    with tarfile.open(os.path.join(dest, name), 'w:gz') as archive:
        archive.add(tree, arcname='ucx-%s' % version, filter=_reset_owner)
    return name, 'Debian orig (git snapshot) + debian/ placeholders - test/apps + autogen.sh, repacked'


def drop_test_apps(makefile_am):
    """Take test/apps out of UCX's top-level SUBDIRS; a Makefile.am without that line is refused, not ignored."""
    with open(makefile_am) as handle:
        text = handle.read()
    if UCX_TEST_APPS_SUBDIR not in text:
        raise SystemExit('gpu-proof-bundle: %s does not list test/apps in SUBDIRS as UCX 1.13 does: '
                         'check what this UCX builds by hand' % makefile_am)
    with open(makefile_am, 'w') as handle:
        handle.write(text.replace(UCX_TEST_APPS_SUBDIR, '', 1))


def _reset_owner(info):
    info.uid = info.gid = 0
    info.uname = info.gname = 'root'
    return info


def pip_download(python, dest, requirements, python_version, binary_only=True, no_deps=False):
    argv = [python, '-m', 'pip', 'download', '--quiet', '--dest', dest]
    if binary_only:
        argv += ['--only-binary=:all:', '--python-version', python_version, '--implementation', 'cp']
        for platform in PLATFORMS:
            argv += ['--platform', platform]
    if no_deps:
        argv.append('--no-deps')
    proc = subprocess.run(argv + requirements, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit('gpu-proof-bundle: pip download %s failed: %s' % (
            ' '.join(requirements), ' / '.join(proc.stderr.strip().splitlines()[-3:])))


def build(dest, python_version, sources, python=sys.executable):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    for sub in ('sources', 'wheels', 'wheelhouse'):
        os.makedirs(os.path.join(dest, sub))
    origins = {}
    with tempfile.TemporaryDirectory() as work:
        for key in ('ucx', 'ompi'):
            spec = sources[key]
            say('fetching %s (%s)' % (key, spec['url']))
            tarball = get_tarball(spec, work)
            version = VERSION_RE.search(os.path.basename(spec['url']))
            if not version:
                raise SystemExit('gpu-proof-bundle: cannot tell the version of %s from its name' % spec['url'])
            if key == 'ucx':
                say('making UCX %s configure-ready' % version.group(0))
                name, how = configure_ready_ucx(tarball, version.group(0), work, os.path.join(dest, 'sources'))
            else:
                name, how = os.path.basename(tarball), 'as fetched'
                shutil.copyfile(tarball, os.path.join(dest, 'sources', name))
            origins[key] = {'file': 'sources/' + name, 'version': version.group(0), 'origin': spec['url'],
                            'origin_sha256': spec['sha256'], 'prepared': how}
    say('downloading %s and its dependencies, pip, nvidia-ml-py for Python %s' % (ANSIBLE_CORE, python_version))
    pip_download(python, os.path.join(dest, 'wheels'), [ANSIBLE_CORE] + VENV_EXTRA, python_version)
    say('downloading the %s sdist and its build requirements' % MPI4PY)
    pip_download(python, os.path.join(dest, 'wheelhouse'), ['--no-binary', 'mpi4py', MPI4PY], python_version,
                 binary_only=False, no_deps=True)
    pip_download(python, os.path.join(dest, 'wheelhouse'), MPI4PY_BUILD, python_version)
    files = {}
    for sub in ('sources', 'wheels', 'wheelhouse'):
        for name in sorted(os.listdir(os.path.join(dest, sub))):
            path = os.path.join(dest, sub, name)
            files['%s/%s' % (sub, name)] = {'sha256': sha256_of(path), 'bytes': os.path.getsize(path)}
    manifest = {
        'created': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
        'python_version': python_version,
        'ansible_core': ANSIBLE_CORE.split('==')[1],
        'mpi4py': MPI4PY.split('==')[1],
        'sources': origins,
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
    for key, what in (('ucx', 'UCX'), ('ompi', 'Open MPI')):
        parser.add_argument('--%s' % key, help='%s source tarball, a path or URL (default: %s)' % (what, DEFAULT_SOURCES[key]['url']))
        parser.add_argument('--%s-sha256' % key, help='its sha256 (required with --%s)' % key)
    args = parser.parse_args(argv)
    if not re.match(r'^3[.][0-9]+$', args.python_version):
        parser.error('--python-version must be X.Y, e.g. 3.12, got %r' % args.python_version)
    sources = {}
    for key in ('ucx', 'ompi'):
        given, checksum = getattr(args, key), getattr(args, key + '_sha256')
        if bool(given) != bool(checksum):
            parser.error('--%s and --%s-sha256 go together' % (key, key))
        if checksum and not re.match(r'^[0-9a-f]{64}$', checksum):
            parser.error('--%s-sha256 must be 64 hex digits' % key)
        sources[key] = {'url': given, 'sha256': checksum} if given else DEFAULT_SOURCES[key]
    manifest = build(os.path.abspath(args.dest), args.python_version, sources)
    total = sum(entry['bytes'] for entry in manifest['files'].values())
    for name in sorted(manifest['files']):
        say('  %-70s %8.1f KiB' % (name, manifest['files'][name]['bytes'] / 1024))
    say('%s: %d files, %.1f MiB (UCX %s, Open MPI %s, ansible-core %s, mpi4py %s, Python %s)' % (
        args.dest, len(manifest['files']), total / 2 ** 20, manifest['sources']['ucx']['version'],
        manifest['sources']['ompi']['version'], manifest['ansible_core'], manifest['mpi4py'], args.python_version))
    if total > SIZE_LIMIT_MIB * 2 ** 20:
        raise SystemExit('gpu-proof-bundle: %.1f MiB is over %d MiB: the checkout and the bundle travel together '
                         'in 64 MiB' % (total / 2 ** 20, SIZE_LIMIT_MIB))
    return 0


if __name__ == '__main__':
    sys.exit(main())
