#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: allreduce_report
short_description: Write the validation report - report.json, report.md, the bandwidth plot and the rail heatmap
description:
  - Writes the C(hpcfabric.cluster.validate) role's report into the directory O(dest), which is created when missing
    - C(report.json) (the report as given plus C(verdicts), indented, keys sorted), C(report.md) (tables a person
    reads, starting with one verdict per node, then the engines side by side), C(allreduce.png) (bus bandwidth
    against message size, one line per engine and run, the threshold dashed) and C(rails.png) (the isolation's
    heatmap, nodes x rails).
  - C(verdicts) is one verdict per node - V(PASS), V(WARN), V(UNKNOWN) or V(FAIL) - with its reasons and actions,
    from every source of the report (preflight, the isolation's findings, the port counters, version drift, health);
    the rules are in C(plugins/module_utils/node_verdicts.py) and docs/validate.md. The hosts whose verdict is V(FAIL)
    are RV(bad_hosts), what the role writes to C(validate_bad_hosts_file).
  - C(rails.png) has a row per node and a column per rail (C(all rails) when the runs had none); a cell is the best
    bus bandwidth (the lowest over the checked sizes, as each run is judged) that node reached on that rail with any
    partner in the isolation's pair runs - over its passing runs when one passed - so a bad partner washes out and a
    bad port stays low. Colours diverge at the threshold (red below, green above; a calibrated threshold's lowest
    value at the checked sizes); a cell with no run is grey; each cell shows its GB/s, C(failed) when no run passed
    and the pass ratio when some failed (a flaky port). Past 48 nodes it shows the 48 with the lowest cells. There is
    no heatmap when the isolation did not run or ran no pair (report.md says so), and an earlier C(rails.png) is then
    removed.
  - Meant to run on the controller (C(delegate_to localhost)), where the report is collected.
  - A file is only written when its content differs, so a second run with the same report changes nothing. The
    plots carry no date or version metadata, so the same report draws the same bytes with the same matplotlib.
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
requirements:
  - matplotlib on the Python that runs the module (on the controller, C(ansible_playbook_python)), unless
    O(png=false).
options:
  dest:
    description:
      - Directory for the report files; created (with parents) when missing.
    type: path
    required: true
  report:
    description:
      - The report, as the C(validate) role builds it.
      - C(generated) (str) - when the report was made, ISO 8601.
      - C(cluster) (dict) - C(hosts) (list of inventory names), C(world_size) (MPI ranks of the full run),
        C(device) (C(cuda) or C(cpu)), C(mpi_library) (the benchmark's C(MPI_Get_library_version) text; its first line
        is shown).
      - C(threshold) (dict) - the result of the C(hpcfabric.cluster.allreduce_threshold) filter (C(mode),
        C(description), C(min_busbw_gbs), C(per_size_gbs), C(applies_to)) plus C(min_size_bytes), the smallest size
        checked. Required.
      - C(rail_threshold) (dict or null) - the one-rail threshold the ring engine's rails are judged against (the
        C(hpcfabric.cluster.pair_threshold) filter); report.md shows each rail and the ring's slow links against it.
      - C(link_rates) (dict or null) - C(node_gbps), the slowest node's Active fabric bandwidth, and C(port_gbps), its
        slowest Active port, in Gb/s (null without RDMA ports); report.md sets each engine's bus bandwidth beside the
        bound they allow.
      - C(verdict) (dict) - the result of the C(hpcfabric.cluster.allreduce_verdict) filter (C(passed), C(correct),
        C(checked), C(failures), C(reason), C(run_error) - how the job failed, a non-zero mpirun exit). Required.
      - C(runs) (list of dicts) - C(name), C(hosts), C(bench) (the JSON of C(files/bench/allreduce.py)) and
        C(mpirun_rc) (its exit status) of each run, the full run first (one run per engine, with C(engine) and
        C(judged), the judged engine first, as the C(hpcfabric.cluster.report_runs) filter gives them), then the
        isolation's runs;
        each is a table in report.md and a line in the plot. report.md puts the engines side by side.
      - C(isolation) (dict or null) - the last result of the C(hpcfabric.cluster.isolation_step) filter (C(rounds),
        C(stages), C(runs), C(findings), C(pass_ratios), C(summary)), when the isolation ran; report.md shows its
        findings with their actions, the pass ratios below 1 and every run.
      - C(preflight) (dict) - host name to its list of preflight problems (the C(hpcfabric.cluster.preflight_problems)
        filter); an empty list for a host without problems.
      - C(train_smoke) (dict or null) - the smoke training verdict (the C(hpcfabric.cluster.train_smoke_verdict)
        filter - C(passed), C(errors), C(mpirun_rc) with each job's exit status, and each job's summary), when it
        ran.
      - C(counters) (dict or null) - the result of the C(hpcfabric.cluster.port_counter_report) filter (the fabric
        ports' counter deltas over each job and the findings of the rules), when the counters were read; report.md
        lists the findings and a table of the deltas other than 0.
      - C(drift) (list of dicts or null) - the version drift findings (the C(findings) of the
        C(hpcfabric.cluster.version_drift) filter), each C({host, component, seen, expected, basis}), when the drift
        check ran (an empty list when it found none); report.md shows them in a table.
      - C(drift_fail) (bool) - whether drift fails the validation (C(validate_drift_fail)) - a drift finding makes its
        node V(FAIL) when true, V(WARN) when false or missing.
      - C(health) (list of dicts or null) - the GPU and link health findings (the C(findings) of the
        C(hpcfabric.cluster.gpu_health_findings) filter), each C({host, device, check, seen, action}) and optionally
        C(severity) (C(warning) makes it V(WARN)), when the health check ran (an empty list when it found none); null
        or missing is a check that did not run.
      - C(health_unread) (list of dicts or null) - the health sources a node could not read (the C(unread) of the
        C(hpcfabric.cluster.gpu_health_findings) filter, each C({host, source, why})); report.md names them under the
        node verdicts, which do not cover them.
      - C(verdicts) is computed and replaces any given.
    type: dict
    required: true
  png:
    description:
      - Draw C(allreduce.png) and C(rails.png). With V(false) neither is drawn (existing ones are left alone) and
        matplotlib is not needed.
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Nothing is written; the result says which files would change.
  diff_mode:
    support: partial
    details: Diffs of report.json and report.md; the plots are binary and only listed in RV(updated).
  platform:
    platforms: posix
notes:
  - When O(png=true) and matplotlib cannot be imported the module fails, naming the package and the interpreter it
    must be installed into.
'''

EXAMPLES = r'''
- name: Write the report on the controller
  hpcfabric.cluster.allreduce_report:
    dest: "{{ validate_report_dir }}"
    report:
      generated: "{{ now(utc=true).isoformat() }}"
      cluster:
        hosts: "{{ ansible_play_hosts }}"
        world_size: "{{ __bench.world_size }}"
        device: cuda
        mpi_library: "{{ __bench.mpi.library_version }}"
      threshold: "{{ __threshold }}"
      verdict: "{{ __bench | hpcfabric.cluster.allreduce_verdict(__threshold, __threshold.min_size_bytes) }}"
      runs:
        - name: all nodes
          hosts: "{{ __bench.hosts }}"
          bench: "{{ __bench }}"
      isolation: null
      preflight: {}
      train_smoke: null
      drift: []
  run_once: true
  delegate_to: localhost

- name: Tables only, on a controller without matplotlib
  hpcfabric.cluster.allreduce_report:
    dest: /var/tmp/validate
    report: "{{ __report }}"
    png: false
  delegate_to: localhost
'''

RETURN = r'''
paths:
  description: Paths of the report files; C(png) only when O(png=true), C(rails) only when the heatmap is drawn.
  returned: success
  type: dict
  contains:
    json:
      description: Path of report.json.
      type: str
      sample: /home/admin/.ansible/hpcfabric/validate/gpu_nodes/report.json
    md:
      description: Path of report.md.
      type: str
      sample: /home/admin/.ansible/hpcfabric/validate/gpu_nodes/report.md
    png:
      description: Path of allreduce.png.
      type: str
      sample: /home/admin/.ansible/hpcfabric/validate/gpu_nodes/allreduce.png
    rails:
      description: Path of rails.png.
      type: str
      sample: /home/admin/.ansible/hpcfabric/validate/gpu_nodes/rails.png
bad_hosts:
  description:
    - The hosts whose verdict in C(verdicts) is V(FAIL), in the cluster's order; empty when none is.
    - A node whose verdict is V(UNKNOWN) (not proven good, for instance when the all-node run failed and the isolation
      did not run) is not listed.
  returned: success
  type: list
  elements: str
  sample: [node02]
nodes:
  description:
    - Each node's verdict, C(report.json)'s C(verdicts.nodes) - C(host), C(verdict) and C(reasons), each C(source),
      C(verdict), C(reason) and C(action); what the validation under Slurm drains and resumes by.
  returned: success
  type: list
  elements: dict
  sample:
    - host: node02
      verdict: FAIL
      reasons: [{source: isolation, verdict: FAIL, reason: "node: fails with every partner on every rail", action: drain node02}]
updated:
  description:
    - Paths of the files that were written (in check mode, that would be written) because their content changed, and
      of an earlier C(rails.png) that was (would be) removed.
  returned: success
  type: list
  elements: str
  sample: [/home/admin/.ansible/hpcfabric/validate/gpu_nodes/report.md]
'''

import json
import os
import sys
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.hpcfabric.cluster.plugins.module_utils.node_verdicts import node_verdicts, rail_matrix
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.plot import (
    HAS_MATPLOTLIB, MATPLOTLIB_IMPORT_ERROR, draw_png, draw_rails_png,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.report import render_markdown

FILES = (('json', 'report.json'), ('md', 'report.md'), ('png', 'allreduce.png'), ('rails', 'rails.png'))


def _read(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _write(module, path, data):
    handle, temp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.%s.' % os.path.basename(path))
    with os.fdopen(handle, 'wb') as stream:
        stream.write(data)
    module.atomic_move(temp, path)


def _diff(path, before, after):
    return {'before_header': path, 'after_header': path,
            'before': before.decode('utf-8', 'replace') if before is not None else '',
            'after': after.decode('utf-8')}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='path', required=True),
            report=dict(type='dict', required=True),
            png=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    dest = module.params['dest']
    report = module.params['report']
    png = module.params['png']
    if os.path.exists(dest) and not os.path.isdir(dest):
        module.fail_json(msg='dest %s exists and is not a directory' % dest)
    if png and not HAS_MATPLOTLIB:
        module.fail_json(
            msg='%s Install it into %s (on the controller that is ansible_playbook_python), or set png=false.' % (
                missing_required_lib('matplotlib', reason='to draw allreduce.png'), sys.executable),
            exception=MATPLOTLIB_IMPORT_ERROR)
    try:
        verdicts = node_verdicts(report)
        matrix = rail_matrix(report) if png else None
        contents = {
            'json': (json.dumps(dict(report, verdicts=verdicts), indent=2, sort_keys=True, ensure_ascii=False)
                     + '\n').encode('utf-8'),
            'md': render_markdown(report, plot='allreduce.png' if png else None,
                                  rails_plot='rails.png' if matrix else None).encode('utf-8'),
        }
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        module.fail_json(msg='cannot render the report: %s' % exc, exception=traceback.format_exc())
    for key, draw, data in (('png', draw_png, report), ('rails', draw_rails_png, matrix)):
        if not png or data is None:
            continue
        try:
            contents[key] = draw(data)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            module.fail_json(msg='cannot draw %s: %s' % (dict(FILES)[key], exc), exception=traceback.format_exc())
    paths = dict((key, os.path.join(dest, name)) for key, name in FILES if key in contents)
    updated = []
    diffs = []
    for key, name in FILES:
        if key not in contents:
            continue
        before = _read(paths[key])
        if before == contents[key]:
            continue
        updated.append(paths[key])
        if key in ('json', 'md'):
            diffs.append(_diff(paths[key], before, contents[key]))
        if not module.check_mode:
            if not os.path.isdir(dest):
                os.makedirs(dest)
            _write(module, paths[key], contents[key])
    # a heatmap of an earlier run's isolation would sit beside a report that says there is none
    stale = os.path.join(dest, dict(FILES)['rails'])
    if png and 'rails' not in contents and os.path.exists(stale):
        updated.append(stale)
        if not module.check_mode:
            os.remove(stale)
    result = dict(changed=bool(updated), paths=paths, updated=updated, bad_hosts=verdicts['bad_hosts'],
                  nodes=verdicts['nodes'])
    if module._diff:
        result['diff'] = diffs
    module.exit_json(**result)


if __name__ == '__main__':
    main()
