# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Version drift across the nodes: every node runs the same kernel, driver, CUDA, RDMA stack, MPI and firmware.

The input is each host's versions, ``{host: {component: version or None}}`` (``None``, or a component missing from a
host's dict, means the host has none or could not read it), and an optional golden manifest ``{component: version}``.

What each host is expected to run, per component:

- a component of the golden manifest: the manifest's version, on every host (a golden ``None`` means "not there");
- any other component: the value most hosts have, ``None`` (absent) counted as a value like any version, so that one
  node with an extra package, HCA or GPU is the odd one as much as one node without it;
- a tie for most hosts (two nodes that differ, or a cluster split in halves): no majority, so the newest of the tied
  values (the highest version, compared number by number; absent is older than any version) - a half-done rollout is
  finished, not undone - and every finding says it was a tie.

A component no host has (``None`` everywhere) and that the golden manifest does not name is skipped. One pass over
the hosts and components: O(hosts x components).
"""
from __future__ import annotations

import re

_PARTS_RE = re.compile(r'(\d+)')
# what a finding says its expected value comes from
BASIS_GOLDEN = 'golden'
BASIS_MAJORITY = 'majority'
BASIS_TIE = 'tie'
_BASIS_TEXT = {BASIS_GOLDEN: 'drift from validate_golden', BASIS_MAJORITY: 'drift from most hosts',
               BASIS_TIE: 'drift, no majority: the newest of the tied values'}


def version_key(value):
    """A sort key for version strings: digit runs compare as numbers (``535.104.05`` > ``535.54.03``), the rest as
    text; ``None`` (absent) sorts first. Total and deterministic for any strings."""
    if value is None:
        return (0, ())
    parts = _PARTS_RE.split(str(value))
    return (1, tuple((1, int(part), '') if part.isdigit() else (0, 0, part) for part in parts if part != ''))


def _text(value):
    return '(none)' if value is None else str(value)


def golden_problems(golden):
    """What is wrong with a golden manifest: not a mapping, or versions that are not strings (an unquoted ``12.4`` is a
    float in YAML, and ``12.40`` would become ``12.4``)."""
    if golden is None:
        return []
    if not isinstance(golden, dict):
        return ['validate_golden must be a mapping of component to version, got %s' % type(golden).__name__]
    problems = []
    for component, version in sorted(golden.items(), key=lambda item: str(item[0])):
        if not isinstance(component, str) or not component:
            problems.append('validate_golden: component %r is not a name' % (component,))
        elif version is not None and not isinstance(version, str):
            problems.append('validate_golden %s: %r is %s, not a version string: quote it' % (
                component, version, _kind(version)))
    return problems


def _kind(value):
    # in words, as Ansible hands YAML values over in types of its own (a tagged float is still a float)
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, (int, float)):
        return 'a number'
    if isinstance(value, dict):
        return 'a mapping'
    if isinstance(value, (list, tuple)):
        return 'a list'
    return 'a %s' % type(value).__name__


def _expected(counts, order):
    """The most common value and whether it was a tie; ``counts``: value to host count, ``order``: values in the
    order first seen (only to keep the result independent of dict order in old Pythons)."""
    top = max(counts.values())
    tied = [value for value in order if counts[value] == top]
    if len(tied) == 1:
        return tied[0], BASIS_MAJORITY
    return max(tied, key=version_key), BASIS_TIE


def drift_findings(versions_by_host, golden=None):
    """``[{host, component, seen, expected, basis}]`` for every host whose component differs from what is expected
    (see the module's docstring), hosts and components in sorted order. ``basis`` is ``golden``, ``majority`` or
    ``tie``."""
    if not isinstance(versions_by_host, dict):
        raise TypeError('the versions must be a mapping of host to {component: version}, got %s'
                        % type(versions_by_host).__name__)
    golden = golden or {}
    problems = golden_problems(golden)
    if problems:
        raise ValueError('; '.join(problems))
    hosts = sorted(versions_by_host)
    for host in hosts:
        if versions_by_host[host] is not None and not isinstance(versions_by_host[host], dict):
            raise TypeError('the versions of %s must be a mapping of component to version, got %s'
                            % (host, type(versions_by_host[host]).__name__))
    components = set(golden)
    for host in hosts:
        components.update(component for component, value in (versions_by_host[host] or {}).items()
                          if value is not None)
    findings = []
    for component in sorted(components):
        seen = dict((host, _value((versions_by_host[host] or {}).get(component))) for host in hosts)
        if component in golden:
            expected, basis = golden[component], BASIS_GOLDEN
        else:
            counts, order = {}, []
            for value in seen.values():
                if value not in counts:
                    counts[value] = 0
                    order.append(value)
                counts[value] += 1
            expected, basis = _expected(counts, order)
        findings.extend({'host': host, 'component': component, 'seen': value, 'expected': expected, 'basis': basis}
                        for host, value in seen.items() if value != expected)
    return findings


def _value(value):
    # versions are compared as text: a number that reached here unquoted still compares with its string form
    return None if value is None else str(value)


def finding_message(finding):
    """One line naming host, component, seen and expected, e.g. ``node02: package:rdma-core 44.0-2, expected 50.0-2
    (drift from most hosts)``."""
    basis = _BASIS_TEXT.get(finding.get('basis'), finding.get('basis'))
    return '%s: %s %s, expected %s (%s)' % (
        finding['host'], finding['component'], _text(finding['seen']), _text(finding['expected']), basis)


def drift_report(versions_by_host, golden=None):
    """The drift check: ``{passed, findings, messages, summary, hosts, components}``; ``messages`` has one line per
    finding (finding_message), ``summary`` one line for the whole cluster."""
    findings = drift_findings(versions_by_host, golden)
    components = set(golden or {})
    for versions in versions_by_host.values():
        components.update(component for component, value in (versions or {}).items() if value is not None)
    hosts = len(versions_by_host)
    if findings:
        drifted = sorted(set(finding['host'] for finding in findings))
        summary = '%d drift findings on %d of %d hosts (%s)' % (
            len(findings), len(drifted), hosts, ', '.join(sorted(set(finding['component'] for finding in findings))))
    else:
        summary = 'no drift: %d hosts agree on %d components%s' % (
            hosts, len(components), ' and validate_golden' if golden else '')
    return {'passed': not findings, 'findings': findings, 'messages': [finding_message(item) for item in findings],
            'summary': summary, 'hosts': hosts, 'components': len(components)}


def with_fact_versions(versions, facts):
    """A host's versions from the node_versions module (``versions``) with those Ansible's facts already hold:
    ``kernel`` (``ansible_facts['kernel']``), ``open_mpi`` and ``ucx`` (``ansible_facts['mpi']`` of mpi_facts).
    ``facts``: ``{kernel, mpi}``, either may be None."""
    result = dict(versions or {})
    facts = facts or {}
    mpi = facts.get('mpi') or {}
    result['kernel'] = facts.get('kernel') or None
    result['open_mpi'] = mpi.get('version') if mpi.get('implementation') == 'Open MPI' else None
    result['ucx'] = (mpi.get('ucx') or {}).get('version')
    return result
