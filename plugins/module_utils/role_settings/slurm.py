# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The slurm role's input rules: group and cluster names, the version, partitions, leaf switches, the site's own
slurm.conf settings, the node health check's settings, accounting (its database's name, user and password), the munge
key's directory on the controller, and the site repository and package names Slurm is installed from.

Rules that need the inventory's groups (a partition or leaf naming hosts outside ``slurm_compute_group``, a controller
group that is empty or holds more than two hosts) are in ``module_utils/slurm_conf.py`` (``inventory_problems``,
filter ``slurm_inventory_problems``), which the role's plan runs again with each node's hardware.
"""
from __future__ import annotations

import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import label_problem, path_problem, url_problem
from ansible_collections.hpcfabric.cluster.plugins.module_utils.package_repository import apt_suite_problem
from ansible_collections.hpcfabric.cluster.plugins.module_utils.slurm_conf import (
    AUTODETECT_NVIDIA, accounting_name_problem, hostlist_expand, password_problem, version_tuple)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.slurm_install import PARTS

# an Ansible group name as the inventory plugins take it without a warning
_GROUP_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
# Slurm lower-cases ClusterName and uses it in file and database names
_CLUSTER_RE = re.compile(r'^[a-z][a-z0-9_-]{0,39}$')
_PARTITION_RE = re.compile(r'^[A-Za-z0-9_-]{1,64}$')
# slurm.conf's time format: minutes, minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]]
_TIME_RE = re.compile(r'^(?:INFINITE|UNLIMITED|\d+(?::\d{1,2}){0,2}|\d+-\d{1,2}(?::\d{1,2}){0,2})$')
_KEY_RE = re.compile(r'^[A-Z][A-Za-z]+$')
# what the role writes itself: a site setting of the same name would be a second, conflicting line
MANAGED_KEYS = ('ClusterName', 'SlurmctldHost', 'SlurmctldParameters', 'AuthType', 'SlurmUser', 'SlurmctldPort',
                'SlurmdPort', 'StateSaveLocation', 'SlurmdSpoolDir', 'SlurmctldPidFile', 'SlurmdPidFile',
                'SlurmctldLogFile', 'SlurmdLogFile', 'ReturnToService', 'SchedulerType', 'SelectType',
                'SelectTypeParameters', 'MpiDefault', 'ProctrackType', 'TaskPlugin', 'GresTypes', 'TopologyPlugin',
                'NodeName', 'PartitionName')
_MANAGED_LOWER = dict((key.lower(), key) for key in MANAGED_KEYS)
# what the role writes while slurm_healthcheck is on; off, a site may name its own health check in slurm_conf_extra
HEALTHCHECK_KEYS = ('HealthCheckProgram', 'HealthCheckInterval', 'HealthCheckNodeState')
# what the role writes while slurm_accounting is on; off, a site may point slurmctld at a slurmdbd of its own there
# (AccountingStorageTRES stays the site's: the role writes gres/gpu only where the site names no TRES)
ACCOUNTING_KEYS = ('AccountingStorageType', 'AccountingStorageHost', 'JobAcctGatherType')
# a Debian package name (Debian policy 5.6.1): lower-case letters, digits, +, - and ., at least two, starting with a
# letter or digit; no version or release (=, /): the version is the repository's, and the read-back checks it
_PACKAGE_RE = re.compile(r'^[a-z0-9][a-z0-9+.-]+$')


def _value_problem(value):
    text = str(value)
    if not text or not text.isprintable() or any(char.isspace() for char in text) or '#' in text:
        return '%r is not one slurm.conf word (no blank, line break or #)' % (value,)
    return None


def _hostlist_problem(value):
    try:
        hostlist_expand(value)
    except ValueError as exc:
        return str(exc)
    return None


def _partition_problems(partitions):
    found = []
    if not isinstance(partitions, list):
        return [('slurm_partitions', 'must be a list of {name, nodes, default, max_time, options}')]
    names = []
    for index, partition in enumerate(partitions):
        label = 'slurm_partitions[%d]' % index
        if not isinstance(partition, dict):
            found.append((label, 'must be a mapping with a name'))
            continue
        unknown = sorted(set(partition) - {'name', 'nodes', 'default', 'max_time', 'options'})
        if unknown:
            found.append((label, 'unknown keys %s (name, nodes, default, max_time, options)' % ', '.join(unknown)))
        name = partition.get('name')
        if not isinstance(name, str) or not _PARTITION_RE.fullmatch(name):
            found.append((label, '%r is not a partition name (letters, digits, _ and -)' % (name,)))
        elif name in names:
            found.append((label, 'partition %s is named twice' % name))
        names.append(name)
        nodes = partition.get('nodes')
        if nodes not in (None, 'ALL'):
            problem = _hostlist_problem(nodes)
            if problem:
                found.append(('%s.nodes' % label, problem))
        if partition.get('max_time') is not None and not _TIME_RE.fullmatch(str(partition['max_time'])):
            found.append(('%s.max_time' % label, '%r is not a Slurm time (INFINITE, minutes, h:m:s or d-h:m:s)'
                          % (partition['max_time'],)))
        options = partition.get('options') or {}
        if not isinstance(options, dict):
            found.append(('%s.options' % label, 'must be a mapping of partition setting to value'))
            continue
        for key, value in options.items():
            if not _KEY_RE.fullmatch(str(key)) or str(key).lower() in ('nodes', 'default', 'maxtime', 'state',
                                                                       'defmempercpu', 'partitionname'):
                found.append(('%s.options' % label, '%r is not a partition setting the role leaves to you' % (key,)))
            elif _value_problem(value):
                found.append(('%s.options.%s' % (label, key), _value_problem(value)))
    return found


def _leaf_problems(leaves):
    if not isinstance(leaves, list):
        return [('slurm_topology_leaves', 'must be a list of {name, nodes}')]
    found = []
    for index, leaf in enumerate(leaves):
        label = 'slurm_topology_leaves[%d]' % index
        if not isinstance(leaf, dict) or set(leaf) != {'name', 'nodes'}:
            found.append((label, 'must be a mapping of exactly name and nodes'))
            continue
        problem = label_problem(leaf['name'])
        if problem:
            found.append(('%s.name' % label, problem))
        problem = _hostlist_problem(leaf['nodes'])
        if problem:
            found.append(('%s.nodes' % label, problem))
    return found


def _healthcheck_problems(settings):
    found = []
    for name in ('slurm_healthcheck', 'slurm_healthcheck_rdma'):
        if settings.get(name) is not None and not isinstance(settings[name], bool):
            found.append((name, 'must be true or false, got %r' % (settings[name],)))
    interval = settings.get('slurm_healthcheck_interval')
    if interval is not None and (isinstance(interval, bool) or not isinstance(interval, int) or interval < 1):
        found.append(('slurm_healthcheck_interval', 'must be a whole number of seconds, 1 or more, got %r'
                      % (interval,)))
    rate = settings.get('slurm_healthcheck_port_rate_gbps')
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0):
        found.append(('slurm_healthcheck_port_rate_gbps', 'must be a rate in Gb/s above 0, or unset for any rate, got '
                      '%r' % (rate,)))
    return found


def _accounting_problems(settings):
    """Accounting's rules. The password is checked whenever it is given and required while accounting is on; no
    message quotes it."""
    found = []
    accounting = settings.get('slurm_accounting')
    if accounting is not None and not isinstance(accounting, bool):
        found.append(('slurm_accounting', 'must be true or false, got %r' % (accounting,)))
    password = settings.get('slurm_accounting_db_password')
    if password in (None, '') and accounting is True:
        found.append(('slurm_accounting_db_password', 'required while slurm_accounting is true: the password slurmdbd '
                      'logs in to its MariaDB database with (keep it in Ansible Vault)'))
    elif password is not None:
        problem = password_problem(password)
        if problem:
            found.append(('slurm_accounting_db_password', problem))
    for name, longest in (('slurm_accounting_db_name', 64), ('slurm_accounting_db_user', 32)):
        if settings.get(name) is not None:
            problem = accounting_name_problem(settings[name], longest)
            if problem:
                found.append((name, problem))
    return found


def _repository_problems(settings):
    """The site repository's rules: its URL, its one signing key, its suite and components."""
    url, key_url, key_src = (settings.get(name) or '' for name in
                             ('slurm_repo_url', 'slurm_repo_key_url', 'slurm_repo_key_src'))
    found = []
    allow_http = boolean(settings.get('slurm_allow_http') or False, strict=False)
    for name, value in (('slurm_repo_url', url), ('slurm_repo_key_url', key_url)):
        problem = value and url_problem(value, allow_http, 'slurm_allow_http')
        if problem:
            found.append((name, problem))
    if url and bool(key_url) == bool(key_src):
        found.append(('slurm_repo_key_url', 'the site repository needs its signing key from exactly one of '
                      'slurm_repo_key_url and slurm_repo_key_src (got url %r, src %r); the role adds no unsigned '
                      'repository' % (key_url, key_src)))
    if not url:
        found += [(name, 'set but slurm_repo_url is not: the key signs the site repository, which the role adds only '
                   'with slurm_repo_url') for name in ('slurm_repo_key_url', 'slurm_repo_key_src') if settings.get(name)]
    suite, components = settings.get('slurm_repo_suite'), settings.get('slurm_repo_components')
    if suite is not None and components is not None:
        problem = apt_suite_problem(suite, components)
        if problem:
            found.append(('slurm_repo_%s' % problem[0], problem[1]))
    return found


def _packages_problems(packages):
    """``slurm_packages``: Debian package names for the parts it names."""
    if not isinstance(packages, dict):
        return [('slurm_packages', 'must be a mapping of %s to lists of package names, got %r'
                 % (', '.join(PARTS), packages))]
    found = []
    for part, names in packages.items():
        label = 'slurm_packages.%s' % part
        if part in PARTS and names is None:
            continue  # null is a part not given: the distribution's names
        if part not in PARTS:
            found.append(('slurm_packages', '%r is not a part of the role (%s)' % (part, ', '.join(PARTS))))
        elif not isinstance(names, list) or not names:
            found.append((label, "must be a non-empty list of package names, got %r; leave the part out for the "
                          "distribution's" % (names,)))
        else:
            found += [('%s[%d]' % (label, index), '%r is not a Debian package name (lower-case letters, digits, +, - '
                       'and ., at least two, starting with a letter or digit)' % (name,))
                      for index, name in enumerate(names) if not isinstance(name, str) or not _PACKAGE_RE.fullmatch(name)]
    return found


def problems(settings):
    """See ``role_settings``."""
    found = []
    for name in ('slurm_controller_group', 'slurm_compute_group'):
        value = settings.get(name)
        if value is not None and (not isinstance(value, str) or not _GROUP_RE.fullmatch(value)):
            found.append((name, '%r is not an inventory group name' % (value,)))
    cluster = settings.get('slurm_cluster_name')
    if cluster is not None and (not isinstance(cluster, str) or not _CLUSTER_RE.fullmatch(cluster)):
        found.append(('slurm_cluster_name', '%r is not a cluster name (lower-case letters, digits, _ and -, at most 40, '
                      'starting with a letter)' % (cluster,)))
    version = settings.get('slurm_version')
    if version is not None:
        try:
            parsed = version_tuple(version)
        except ValueError as exc:
            found.append(('slurm_version', str(exc)))
        else:
            if settings.get('slurm_gres_autodetect') and parsed < AUTODETECT_NVIDIA:
                found.append(('slurm_gres_autodetect', 'AutoDetect=nvidia needs Slurm 24.11 or later, slurm_version is '
                              '%s' % version))
    if settings.get('slurm_partitions') is not None:
        found += _partition_problems(settings['slurm_partitions'])
    if settings.get('slurm_topology_leaves') is not None:
        found += _leaf_problems(settings['slurm_topology_leaves'])
    spine = settings.get('slurm_topology_spine')
    if spine is not None and label_problem(spine):
        found.append(('slurm_topology_spine', label_problem(spine)))
    extra = settings.get('slurm_conf_extra')
    if extra is not None:
        if not isinstance(extra, dict):
            found.append(('slurm_conf_extra', 'must be a mapping of slurm.conf setting to value'))
        else:
            managed = dict(_MANAGED_LOWER)
            if settings.get('slurm_healthcheck', True) is not False:
                managed.update((key.lower(), key) for key in HEALTHCHECK_KEYS)
            if settings.get('slurm_accounting') is True:
                managed.update((key.lower(), key) for key in ACCOUNTING_KEYS)
            for key, value in extra.items():
                if str(key).lower() in managed:
                    found.append(('slurm_conf_extra', '%s is written by the role (from the cluster model and its '
                                  'variables); a second line would contradict it' % managed[str(key).lower()]))
                elif not _KEY_RE.fullmatch(str(key)):
                    found.append(('slurm_conf_extra', '%r is not a slurm.conf setting name' % (key,)))
                elif _value_problem(value):
                    found.append(('slurm_conf_extra.%s' % key, _value_problem(value)))
    reserved = settings.get('slurm_memory_reserved_mb')
    if reserved is not None and (not isinstance(reserved, int) or isinstance(reserved, bool) or reserved < 0):
        found.append(('slurm_memory_reserved_mb', 'must be a whole number of MB, 0 or more, got %r' % (reserved,)))
    found += _healthcheck_problems(settings)
    found += _accounting_problems(settings)
    found += _repository_problems(settings)
    if settings.get('slurm_packages') is not None:
        found += _packages_problems(settings['slurm_packages'])
    if (settings.get('slurm_repo_url') or settings.get('slurm_packages')) and not version:
        found.append(('slurm_version', "required with slurm_repo_url or slurm_packages: the role plans slurm.conf for "
                      "the Slurm the packages install and checks it after the install, and the distribution's version "
                      "would not be that one (e.g. slurm_version: '23.11')"))
    key_dir = settings.get('slurm_munge_key_dir')
    if key_dir is not None:
        found += [('slurm_munge_key_dir', problem) for problem in [path_problem(key_dir, owned=True, private=True)]
                  if problem]
    return found
