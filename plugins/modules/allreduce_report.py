#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: allreduce_report
short_description: Write the validation report - report.json, report.md and the allreduce.png bandwidth plot
description:
  - Writes the C(hpcfabric.cluster.validate) role's report into the directory O(dest), which is created when missing
    - C(report.json) (the report as given, indented, keys sorted), C(report.md) (tables a person reads) and
    C(allreduce.png) (bus bandwidth against message size, one line per run, the threshold dashed).
  - Meant to run on the controller (C(delegate_to localhost)), where the report is collected.
  - A file is only written when its content differs, so a second run with the same report changes nothing. The
    plot carries no date or version metadata, so the same report draws the same bytes with the same matplotlib.
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
        C(description), C(min_busbw_gbs), C(per_size_gbs)) plus C(min_size_bytes), the smallest size checked.
        Required.
      - C(verdict) (dict) - the result of the C(hpcfabric.cluster.allreduce_verdict) filter (C(passed), C(correct),
        C(checked), C(failures), C(reason), C(run_error) - how the job failed, a non-zero mpirun exit). Required.
      - C(runs) (list of dicts) - C(name), C(hosts), C(bench) (the JSON of C(files/bench/allreduce.py)) and
        C(mpirun_rc) (its exit status) of each run, the full run first, then the isolation's runs; each is a table in
        report.md and a line in the plot.
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
      - C(health) (list of dicts or null) - the GPU and link health findings (the C(findings) of the
        C(hpcfabric.cluster.gpu_health_findings) filter), each C({host, device, check, seen, action}), when the health
        check ran (an empty list when it found none).
    type: dict
    required: true
  png:
    description:
      - Draw C(allreduce.png). With V(false) no plot is drawn (an existing one is left alone) and matplotlib is not
        needed.
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
    details: Diffs of report.json and report.md; the plot is binary and only listed in RV(updated).
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
  description: Paths of the report files; C(png) only when O(png=true).
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
updated:
  description: Paths of the files that were written (in check mode, that would be written) because their content changed.
  returned: success
  type: list
  elements: str
  sample: [/home/admin/.ansible/hpcfabric/validate/gpu_nodes/report.md]
'''

import io
import json
import math
import os
import sys
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate_checks import format_gbs, human_size
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate_report import render_markdown

try:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator
except ImportError:
    HAS_MATPLOTLIB = False
    MATPLOTLIB_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_MATPLOTLIB = True
    MATPLOTLIB_IMPORT_ERROR = None

FILES = (('json', 'report.json'), ('md', 'report.md'), ('png', 'allreduce.png'))
# beyond this many runs (a large cluster's isolation pairs) the legend names only the first ones
LEGEND_RUNS = 10
MAX_TICKS = 12


def _series(run):
    bench = run.get('bench') or {}
    points = sorted((row['size_bytes'], row['busbw_gbs']) for row in bench.get('results') or []
                    if row.get('size_bytes') and row.get('busbw_gbs') is not None)
    return [size for size, dummy in points], [busbw for dummy, busbw in points]


def _draw_threshold(axes, threshold):
    min_size = threshold.get('min_size_bytes') or 0
    if threshold.get('per_size_gbs') is not None:
        points = sorted((int(size), value) for size, value in threshold['per_size_gbs'].items() if int(size) >= min_size)
        if points:
            axes.plot([size for size, dummy in points], [value for dummy, value in points], linestyle='--',
                      color='black', linewidth=1.5, label='threshold (%s)' % threshold.get('mode'))
    elif threshold.get('min_busbw_gbs') is not None:
        axes.axhline(threshold['min_busbw_gbs'], linestyle='--', color='red', linewidth=1.5,
                     label='threshold %s GB/s (%s)' % (format_gbs(threshold['min_busbw_gbs']), threshold.get('mode')))
    if min_size > 0:
        axes.axvline(min_size, linestyle=':', color='grey', linewidth=1, label='checked from %s' % human_size(min_size))


def draw_png(report):
    """Return the PNG bytes of the bandwidth plot."""
    figure = Figure(figsize=(10, 6), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    runs = report.get('runs') or []
    sizes = set()
    for index, run in enumerate(runs):
        xs, ys = _series(run)
        if not xs:
            continue
        sizes.update(xs)
        axes.plot(xs, ys, marker='o', markersize=3, linewidth=2 if index == 0 else 1,
                  label=(run.get('name') or 'run %d' % (index + 1)) if index < LEGEND_RUNS else None)
    if len(runs) > LEGEND_RUNS:
        axes.plot([], [], ' ', label='and %d more runs (report.json)' % (len(runs) - LEGEND_RUNS))
    _draw_threshold(axes, report.get('threshold') or {})
    axes.set_xscale('log', base=2)
    ticks = sorted(sizes)
    if ticks:
        ticks = ticks[::int(math.ceil(len(ticks) / float(MAX_TICKS)))]
        axes.set_xticks(ticks)
        axes.set_xticklabels([human_size(size) for size in ticks], rotation=45, ha='right')
    axes.xaxis.set_minor_locator(NullLocator())
    axes.set_ylim(bottom=0)
    axes.set_xlabel('message size')
    axes.set_ylabel('bus bandwidth (GB/s)')
    cluster = report.get('cluster') or {}
    axes.set_title('allreduce bus bandwidth: %s (%s ranks, %s)' % (
        'PASS' if (report.get('verdict') or {}).get('passed') else 'FAIL', cluster.get('world_size', '?'),
        cluster.get('device', '?')))
    axes.grid(True, which='major', alpha=0.3)
    axes.legend(loc='best', fontsize='small')
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png', metadata={'Software': None})
    return buffer.getvalue()


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
        contents = {
            'json': (json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + '\n').encode('utf-8'),
            'md': render_markdown(report, plot='allreduce.png' if png else None).encode('utf-8'),
        }
    except (ValueError, TypeError) as exc:
        module.fail_json(msg='cannot render the report: %s' % exc)
    if png:
        try:
            contents['png'] = draw_png(report)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            module.fail_json(msg='cannot draw allreduce.png: %s' % exc, exception=traceback.format_exc())
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
        if key != 'png':
            diffs.append(_diff(paths[key], before, contents[key]))
        if not module.check_mode:
            if not os.path.isdir(dest):
                os.makedirs(dest)
            _write(module, paths[key], contents[key])
    result = dict(changed=bool(updated), paths=paths, updated=updated)
    if module._diff:
        result['diff'] = diffs
    module.exit_json(**result)


if __name__ == '__main__':
    main()
