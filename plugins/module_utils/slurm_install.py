# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The slurm role's install: the packages each host gets, the site repository that may serve them, and the version
the installed daemons report against the one the role planned for.

A host has parts: ``controller`` (slurmctld), ``compute`` (slurmd) and ``accounting`` (slurmdbd, on the primary
controller). Each part's Slurm packages are the distribution's names unless ``slurm_packages`` names that part; what
the role needs beside Slurm (munge, the PMIx library, MariaDB) is added whoever built Slurm.
"""
from __future__ import annotations

import fnmatch
import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.package_repository import apt_repository, repository_files
from ansible_collections.hpcfabric.cluster.plugins.module_utils.slurm_conf import version_tuple

PARTS = ('controller', 'compute', 'accounting')
# the site repository's name in its files: /etc/apt/sources.list.d/hpcfabric-slurm.sources, ...
REPOSITORY = 'slurm'
# the daemon of each part whose -V the read-back asks. slurmctld and slurmd print their version before reading any
# configuration; slurmdbd reads slurmdbd.conf first (22.05.8: "No slurmdbd.conf file ... fatal: StorageType must be
# specified" on a fresh host), so accounting, always beside a controller, is read back through that host's slurmctld
DAEMONS = {'controller': 'slurmctld', 'compute': 'slurmd'}
# Slurm's packages under any packaging: Debian's and Ubuntu's (slurmctld, slurmd, slurmdbd, slurm-client,
# slurm-wlm-*, libslurm*, libpmi0, libpmi2-0, libpam-slurm-adopt, sview) and SchedMD's own (slurm-smd-*). The pin
# holds them all, so that a Slurm package the site's repository also has (a plugin package, the PMI libraries, the
# slurm-smd base package its daemons depend on) never mixes the two builds at an upgrade; the rest of that repository
# keeps apt's default priority.
PIN_GLOBS = ('slurm*', 'libslurm*', 'libpmi0*', 'libpmi2-*', 'libpam-slurm*', 'sview')
# what print_slurm_version() prints (src/common/proc_args.c): PACKAGE_NAME, a blank, SLURM_VERSION_STRING;
# Debian's build names itself slurm-wlm, SchedMD's slurm
_VERSION_LINE = re.compile(r'^(?P<package>[A-Za-z][A-Za-z0-9_.+-]*) (?P<version>\d+\.\d+(?:\.\d+)?(?:-\S+)?)$')


def _names(packages, part, label):
    names = packages.get(part)
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise ValueError('%s.%s must be a list of package names, got %r' % (label, part, names))
    return names


def install_plan(settings):
    """What a host installs, from ``settings``: ``{packages, daemons, files, repository}``.

    ``settings``: ``parts`` (the host's, among ``PARTS``), ``distro_packages`` (each part's Slurm packages as the
    distribution names them), ``support_packages`` (what each part needs beside Slurm), ``site_packages``
    (``slurm_packages``: each part it names, not None, replaces that part's Slurm packages, and only those), ``repo_url``,
    ``repo_suite``, ``repo_components`` (the site repository, ``slurm_repo_*``).

    ``packages``: each part's Slurm packages then its support packages, parts in ``PARTS``' order, each name once;
    ``daemons``: the parts' daemons whose ``-V`` the read-back asks (``DAEMONS``); ``files``: where the site repository's key,
    source and pin go (also to remove them); ``repository``: ``site_repository``, or None without ``repo_url``.
    """
    parts = settings.get('parts') or []
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        raise ValueError('parts must be among %s, got %s' % (', '.join(PARTS), ', '.join(map(str, unknown))))
    site = settings.get('site_packages') or {}
    if not isinstance(site, dict):
        raise ValueError('slurm_packages must be a mapping of part to package names, got %r' % (site,))
    packages = []
    for part in PARTS:
        if part in parts:
            slurm = (_names(site, part, 'slurm_packages') if site.get(part) is not None
                     else _names(settings.get('distro_packages') or {}, part, 'distribution'))
            for name in slurm + _names(settings.get('support_packages') or {}, part, 'support'):
                if name not in packages:
                    packages.append(name)
    url = settings.get('repo_url')
    return {'packages': packages, 'daemons': [DAEMONS[part] for part in PARTS if part in parts and part in DAEMONS],
            'files': repository_files(REPOSITORY, 'apt'),
            'repository': site_repository(url, settings.get('repo_suite', './'), settings.get('repo_components'), site)
            if url else None}


def pin_packages(site=None):
    """The ``Package:`` line of the site repository's pin: ``PIN_GLOBS``, then each name of ``site``
    (``slurm_packages``) that none of them matches."""
    extra = []
    for part in PARTS:
        for name in _names(site, part, 'slurm_packages') if site and site.get(part) is not None else []:
            if name not in extra and not any(fnmatch.fnmatchcase(name, glob) for glob in PIN_GLOBS):
                extra.append(name)
    return ' '.join(PIN_GLOBS + tuple(extra))


def site_repository(url, suite='./', components=None, site=None):
    """``package_repository.apt_repository`` for the site's Slurm repository, its pin limited to
    Slurm's packages (``apt_pin.packages``, from ``pin_packages``)."""
    repository = apt_repository(REPOSITORY, url, suite, components)
    repository['apt_pin']['packages'] = pin_packages(site)
    return repository


def parse_version(text):
    """``{package, version, major_minor}`` from the output of ``slurmctld -V`` (or slurmd, slurmdbd, sinfo):
    ``slurm-wlm 22.05.8`` (Debian), ``slurm 24.11.5`` (SchedMD's packages, a source build). The first line that is
    not blank counts; ``major_minor`` is ``"22.05"``."""
    lines = [line.strip() for line in str(text or '').splitlines() if line.strip()]
    match = _VERSION_LINE.match(lines[0]) if lines else None
    if not match:
        raise ValueError('%r is not a Slurm version line (<package> <major>.<minor>[.<micro>], e.g. slurm 24.11.5)'
                         % (lines[0] if lines else '',))
    major, minor = version_tuple(match.group('version'))
    return {'package': match.group('package'), 'version': match.group('version'),
            'major_minor': '%d.%02d' % (major, minor)}


def version_problems(results, planned, slurm_version, host):
    """``['slurm_version on <host>: <what is wrong>']`` for the registered ``<daemon> -V`` runs ``results`` (each with
    ``item``, the daemon, and its ``rc``, ``stdout``, ``stderr``) whose Slurm is not the ``planned`` version.

    ``planned`` is the version the role planned slurm.conf for: ``slurm_version``, or the distribution's where that is
    unset (None). Only major.minor counts: a Slurm release's plugins and settings change with it, never with the
    micro version.
    """
    expected = version_tuple(planned)
    why = 'slurm_version' if slurm_version else "the distribution's, slurm_version unset"
    found = []
    for result in results or []:
        daemon = result.get('item')
        if result.get('rc') != 0:
            # a command that is not there is rc 2 with Ansible's own message, and nothing on stderr
            said = (result.get('stderr') or result.get('msg') or '').strip()
            found.append('%s -V failed (rc %s): %s (no installed package ships %s, or it cannot start; slurm_packages '
                         'names the packages of each part)' % (daemon, result.get('rc'), said, daemon))
            continue
        try:
            seen = parse_version(result.get('stdout'))
        except ValueError as exc:
            found.append('%s -V: %s' % (daemon, exc))
            continue
        if version_tuple(seen['version']) != expected:
            found.append('%s -V says %s %s, but the role planned Slurm %s (%s): set slurm_version to %s if these '
                         'packages are the ones meant, or install the planned version (the role installs missing '
                         'packages and upgrades none)' % (daemon, seen['package'], seen['version'], planned, why,
                                                          seen['major_minor']))
    return ['slurm_version on %s: %s' % (host, problem) for problem in found]
