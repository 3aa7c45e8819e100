#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Build, serve and stop a signed TEST apt repository of stand-in packages described by a YAML spec.

The packages carry real names (e.g. NVIDIA's CUDA repository's) but hold only small stand-in scripts, units and
files; every one says so. A spec may instead (or as well) repack real packages of a Debian archive under a site's
version (``repack``: a site's own build of the distribution's Slurm, say). The repository is flat (``deb URL /``),
like NVIDIA's CUDA and DOCA repositories, signed with a throwaway key made for the build. It exists for tests and is never a default anywhere. See README.md.

Usage:
  testrepo.py build SPEC OUTDIR     OUTDIR/www/<repository.path>/ (debs, Packages, Release, InRelease),
                                    OUTDIR/gnupg (the throwaway key; outside what is served)
  testrepo.py serve OUTDIR --bind ADDR --port PORT   serve OUTDIR/www in the background (pid in OUTDIR/http.pid,
                                                     requests logged to OUTDIR/http.log)
  testrepo.py stop OUTDIR           stop that server
"""
from __future__ import annotations
import argparse
import gzip
import hashlib
import lzma
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from email.utils import formatdate
from pathlib import Path

import yaml

MARKER = '.hpcfabric-testrepo'
STANDIN_NOTE = ('This package is a TEST stand-in built by tests/testrepo/testrepo.py of the hpcfabric.cluster '
                'collection. It carries a real package name but none of the real software.')


class SpecError(Exception):
    pass


def run(argv, **kwargs):
    try:
        return subprocess.run(argv, check=True, capture_output=True, **kwargs)
    except FileNotFoundError:
        raise SpecError('%s is not installed (dpkg-dev and gnupg provide the tools this script needs)' % argv[0])
    except subprocess.CalledProcessError as e:
        raise SpecError('%s failed (rc %d): %s' % (' '.join(argv), e.returncode, e.stderr.decode(errors='replace')))


def prepare_outdir(outdir):
    """OUTDIR is the script's own: a directory it did not make is never emptied."""
    if outdir.exists() and any(outdir.iterdir()) and not (outdir / MARKER).exists():
        raise SpecError('%s exists, is not empty and was not made by this script' % outdir)
    for sub in ('www', 'gnupg', 'build'):
        shutil.rmtree(outdir / sub, ignore_errors=True)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / MARKER).touch()
    gnupg = outdir / 'gnupg'
    gnupg.mkdir(mode=0o700)
    return gnupg


def make_key(gnupg, uid):
    """A signing key that lives as long as the test needs it; no passphrase, gone with OUTDIR."""
    gpg = ['gpg', '--homedir', str(gnupg), '--batch']
    run(gpg + ['--pinentry-mode', 'loopback', '--passphrase', '', '--quick-gen-key', uid, 'ed25519', 'sign', '2d'])
    listing = run(gpg + ['--with-colons', '--list-secret-keys']).stdout.decode()
    fingerprint = next(line.split(':')[9] for line in listing.splitlines() if line.startswith('fpr:'))
    public = run(gpg + ['--export', fingerprint]).stdout
    armored = run(gpg + ['--armor', '--export', fingerprint]).stdout
    return gpg + ['--local-user', fingerprint], public, armored


def control_text(pkg, defaults):
    fields = [('Package', pkg['name']), ('Version', str(pkg['version'])),
              ('Architecture', pkg.get('architecture', defaults.get('architecture', 'all'))),
              ('Maintainer', defaults.get('maintainer', 'hpcfabric TEST repository <test@invalid>')),
              ('Section', pkg.get('section', 'misc')), ('Priority', 'optional')]
    for key in ('depends', 'provides', 'conflicts', 'replaces'):
        if pkg.get(key):
            fields.append((key.capitalize(), ', '.join(pkg[key])))
    synopsis = '%s (TEST stand-in)' % pkg.get('description', pkg['name'])
    fields.append(('Description', '%s\n %s' % (synopsis, STANDIN_NOTE)))
    return ''.join('%s: %s\n' % field for field in fields)


def build_package(pkg, defaults, stage_root, pool, public_key):
    for key in ('name', 'version'):
        if key not in pkg:
            raise SpecError('a package in the spec has no %s: %r' % (key, pkg))
    version = str(pkg['version'])
    stage = stage_root / ('%s_%s' % (pkg['name'], version.replace(':', '%')))
    (stage / 'DEBIAN').mkdir(parents=True)
    (stage / 'DEBIAN' / 'control').write_text(control_text(pkg, defaults))
    files = list(pkg.get('files', []))
    files.append({'path': '/usr/share/doc/%s/README.hpcfabric-test' % pkg['name'], 'content': STANDIN_NOTE + '\n'})
    conffiles = []
    for f in files:
        path = f.get('path', '')
        if not path.startswith('/') or '..' in path.split('/'):
            raise SpecError('%s: file path %r must be absolute' % (pkg['name'], path))
        dest = stage / path.lstrip('/')
        dest.parent.mkdir(parents=True, exist_ok=True)
        if f.get('source') == 'signing-key':
            dest.write_bytes(public_key)
        elif 'content' in f:
            dest.write_text(f['content'])
        else:
            raise SpecError('%s: file %s needs content or source: signing-key' % (pkg['name'], path))
        dest.chmod(int(str(f.get('mode', '0644')), 8))
        # what debhelper does: files under /etc are configuration files dpkg keeps local edits of
        if path.startswith('/etc/'):
            conffiles.append(path)
    if conffiles:
        (stage / 'DEBIAN' / 'conffiles').write_text(''.join(p + '\n' for p in conffiles))
    arch = pkg.get('architecture', defaults.get('architecture', 'all'))
    deb = pool / ('%s_%s_%s.deb' % (pkg['name'], version.rsplit(':', maxsplit=1)[-1], arch))
    run(['dpkg-deb', '--root-owner-group', '-Zgzip', '--build', str(stage), str(deb)])
    return deb


def _paragraphs(text):
    """The fields of each paragraph of a Debian index (continuation lines dropped: only single-line fields are read)."""
    for para in text.split('\n\n'):
        fields = {}
        for line in para.splitlines():
            if line and not line[0].isspace() and ':' in line:
                key, value = line.split(':', 1)
                fields[key] = value.strip()
        if 'Package' in fields:
            yield fields


def _fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.read()
    except OSError as e:
        raise SpecError('cannot fetch %s: %s' % (url, e))


def repack_packages(spec, pool, stage_root, cache):
    """Real packages of a Debian archive, each under its version plus ``version_suffix``, written to ``pool``.

    The index names each package's current file and SHA256, so the spec names no version and still works after a
    point release. Exact-version dependencies between the repacked packages (``slurmd`` on ``slurm-wlm-basic-plugins
    (= 22.05.8-4+deb12u3)``) follow the new version; the files stay byte for byte the archive's.
    """
    for key in ('archive', 'suite', 'component', 'architecture', 'version_suffix', 'packages'):
        if not spec.get(key):
            raise SpecError('repack needs %s' % key)
    base = spec['archive'].rstrip('/')
    index_url = '%s/dists/%s/%s/binary-%s/Packages.xz' % (base, spec['suite'], spec['component'], spec['architecture'])
    index = {f['Package']: f for f in _paragraphs(lzma.decompress(_fetch(index_url)).decode())}
    missing = [name for name in spec['packages'] if name not in index]
    if missing:
        raise SpecError('%s has no %s' % (index_url, ', '.join(missing)))
    cache.mkdir(parents=True, exist_ok=True)
    stage_root.mkdir(parents=True, exist_ok=True)
    versions = {name: index[name]['Version'] for name in spec['packages']}
    for name in spec['packages']:
        fields = index[name]
        deb = cache / fields['Filename'].rsplit('/', 1)[-1]
        if not deb.exists() or hashlib.sha256(deb.read_bytes()).hexdigest() != fields['SHA256']:
            data = _fetch('%s/%s' % (base, fields['Filename']))
            if hashlib.sha256(data).hexdigest() != fields['SHA256']:
                raise SpecError('%s does not match the SHA256 of %s' % (fields['Filename'], index_url))
            deb.write_bytes(data)
        stage = stage_root / ('repack-' + name)
        run(['dpkg-deb', '--raw-extract', str(deb), str(stage)])
        control = stage / 'DEBIAN' / 'control'
        text = control.read_text()
        new_version = versions[name] + spec['version_suffix']
        text = re.sub(r'^Version: .*$', 'Version: ' + new_version, text, count=1, flags=re.M)
        for other, version in versions.items():
            text = text.replace('%s (= %s)' % (other, version), '%s (= %s)' % (other, version + spec['version_suffix']))
        control.write_text(text)
        out = pool / ('%s_%s_%s.deb' % (name, new_version.rsplit(':', maxsplit=1)[-1], fields['Architecture']))
        run(['dpkg-deb', '--root-owner-group', '-Zgzip', '--build', str(stage), str(out)])
    return len(spec['packages'])


def release_text(repo, index_files, meta):
    lines = ['Origin: %s' % meta.get('origin', 'hpcfabric TEST'),
             'Label: %s' % meta.get('label', 'hpcfabric TEST repository'),
             'Architectures: %s' % ' '.join(meta.get('architectures', ['amd64', 'all'])),
             'Date: %s' % formatdate(usegmt=True)]
    for field, algo in (('MD5Sum', 'md5'), ('SHA256', 'sha256')):
        lines.append('%s:' % field)
        for name in index_files:
            data = (repo / name).read_bytes()
            lines.append(' %s %d %s' % (hashlib.new(algo, data).hexdigest(), len(data), name))
    return '\n'.join(lines) + '\n'


def build(spec_path, outdir):
    spec = yaml.safe_load(Path(spec_path).read_text())
    meta = spec.get('repository') or {}
    if not meta.get('path') or not (spec.get('packages') or spec.get('repack')):
        raise SpecError('%s needs repository.path and a packages list or a repack' % spec_path)
    gnupg = prepare_outdir(outdir)
    sign, public, armored = make_key(gnupg, meta.get('key_uid', 'hpcfabric TEST repository (throwaway) <test@invalid>'))
    repo = outdir / 'www' / meta['path'].strip('/')
    repo.mkdir(parents=True)
    stage_root = outdir / 'build'
    for pkg in spec.get('packages') or []:
        build_package(pkg, spec.get('defaults') or {}, stage_root, repo, public)
    count = len(spec.get('packages') or [])
    if spec.get('repack'):
        # downloads are kept across builds (checked against the index each time)
        count += repack_packages(spec['repack'], repo, stage_root, outdir / 'downloads')
    shutil.rmtree(stage_root, ignore_errors=True)
    packages = run(['dpkg-scanpackages', '--multiversion', '.', '/dev/null'], cwd=str(repo)).stdout
    (repo / 'Packages').write_bytes(packages)
    with gzip.GzipFile(str(repo / 'Packages.gz'), 'wb', mtime=0) as gz:
        gz.write(packages)
    (repo / 'Release').write_text(release_text(repo, ['Packages', 'Packages.gz'], meta))
    run(sign + ['--clearsign', '--output', str(repo / 'InRelease'), str(repo / 'Release')])
    run(sign + ['--armor', '--detach-sign', '--output', str(repo / 'Release.gpg'), str(repo / 'Release')])
    # the public key, for a check or a repository definition that names a key URL (dnf's gpgkey)
    (repo / 'signing-key.asc').write_bytes(armored)
    (repo / 'signing-key.gpg').write_bytes(public)
    print('%s: %d packages, signed by a throwaway key (%s)' % (repo, count, gnupg))


def server_pid(outdir):
    """The pid of this OUTDIR's server when it runs, else None."""
    try:
        pid = int((outdir / 'http.pid').read_text())
        cmdline = Path('/proc/%d/cmdline' % pid).read_bytes().split(b'\0')
    except (OSError, ValueError):
        return None
    return pid if b'http.server' in cmdline and str(outdir / 'www').encode() in cmdline else None


def serve(outdir, bind, port):
    if not (outdir / 'www').is_dir():
        raise SpecError('%s/www does not exist: build the repository first' % outdir)
    if server_pid(outdir):
        raise SpecError('a server for %s already runs (pid %d)' % (outdir, server_pid(outdir)))
    with open(str(outdir / 'http.log'), 'ab') as log:
        proc = subprocess.Popen([sys.executable, '-m', 'http.server', str(port), '--bind', bind,
                                 '--directory', str(outdir / 'www')],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (outdir / 'http.pid').write_text('%d\n' % proc.pid)
    deadline = time.time() + 10
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SpecError('the HTTP server exited (rc %d): %s' % (proc.returncode, (outdir / 'http.log').read_text()[-500:]))
        try:
            socket.create_connection((bind, port), timeout=1).close()
            print('serving %s/www on http://%s:%d/ (pid %d)' % (outdir, bind, port, proc.pid))
            return
        except OSError:
            time.sleep(0.1)
    proc.terminate()
    raise SpecError('the HTTP server did not listen on %s:%d within 10 s' % (bind, port))


def stop(outdir):
    pid = server_pid(outdir)
    if pid is None:
        print('no server for %s' % outdir)
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 5
    while time.time() < deadline and Path('/proc/%d' % pid).exists():
        time.sleep(0.1)
    if Path('/proc/%d' % pid).exists():
        os.kill(pid, signal.SIGKILL)
    (outdir / 'http.pid').unlink()
    print('stopped the server for %s (pid %d)' % (outdir, pid))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('build', help='build and sign the repository a spec describes')
    p.add_argument('spec')
    p.add_argument('outdir')
    p = sub.add_parser('serve', help='serve OUTDIR/www over HTTP in the background')
    p.add_argument('outdir')
    p.add_argument('--bind', required=True)
    p.add_argument('--port', type=int, required=True)
    p = sub.add_parser('stop', help='stop the server of OUTDIR')
    p.add_argument('outdir')
    args = parser.parse_args(argv)
    outdir = Path(args.outdir).resolve()
    try:
        if args.command == 'build':
            build(args.spec, outdir)
        elif args.command == 'serve':
            serve(outdir, args.bind, args.port)
        else:
            stop(outdir)
    except SpecError as e:
        print('testrepo.py %s: error: %s' % (args.command, e), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
