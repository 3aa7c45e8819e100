# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validation's plots, drawn with matplotlib: ``allreduce.png`` (bus bandwidth against message size, one line per
run, the threshold drawn) and ``rails.png`` (the isolation's node x rail heatmap of ``node_verdicts.rail_matrix``).

matplotlib is imported here only: without it ``HAS_MATPLOTLIB`` is false and the report's tables are still written
(the ``allreduce_report`` module says what to install).
"""

from __future__ import annotations

import io
import math
import traceback

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.units import format_gbs, human_size

try:
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import Normalize, TwoSlopeNorm
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator
except ImportError:
    HAS_MATPLOTLIB = False
    MATPLOTLIB_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_MATPLOTLIB = True
    MATPLOTLIB_IMPORT_ERROR = None

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
        # a threshold of the ring's rails is drawn for what it is: each rail's inter-node bandwidth, not a run's busbw
        axes.axhline(threshold['min_busbw_gbs'], linestyle='--', color='red', linewidth=1.5,
                     label='%s %s GB/s (%s)' % ('rail threshold' if threshold.get('applies_to') == 'rails' else 'threshold',
                                                format_gbs(threshold['min_busbw_gbs']), threshold.get('mode')))
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
    return _png_bytes(figure)


def _png_bytes(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png', metadata={'Software': None})
    return buffer.getvalue()


def _rails_norm(matrix):
    values = [cell['busbw_gbs'] or 0.0 for row in matrix['cells'] for cell in row if cell is not None]
    threshold = matrix['threshold_gbs']
    if not threshold or threshold <= 0:
        return Normalize(vmin=0.0, vmax=max(values + [1.0]))
    # centred on the threshold: red below, green above, as far above as the threshold is above 0 at least
    return TwoSlopeNorm(vcenter=threshold, vmin=0.0, vmax=max(values + [2 * threshold]))


def _rails_label(cell):
    if cell is None:
        return 'no run'
    text = 'no result' if cell['busbw_gbs'] is None else format_gbs(cell['busbw_gbs'])
    if not cell['passed']:
        return text + '\nfailed'
    # the best run hides the failed ones: a flaky port is green with its share of passes under it
    ratio = cell.get('pass_ratio')
    return text if ratio is None or ratio >= 1 else '%s\n%d%% passed' % (text, round(100 * ratio))


def draw_rails_png(matrix):
    """Return the PNG bytes of the heatmap of :func:`rail_matrix`'s matrix: nodes x rails, coloured against the
    threshold, each cell annotated with its GB/s."""
    rows, columns = len(matrix['hosts']), len(matrix['rails'])
    figure = Figure(figsize=(max(6.0, 1.3 * columns + 4.0), max(3.0, 0.4 * rows + 1.8)), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    colours = colormaps['RdYlGn'].with_extremes(bad='lightgrey')
    norm = _rails_norm(matrix)
    values = [[float('nan') if cell is None else (cell['busbw_gbs'] or 0.0) for cell in row] for row in matrix['cells']]
    image = axes.imshow(values, cmap=colours, norm=norm, aspect='auto', interpolation='nearest')
    for row, cells in enumerate(matrix['cells']):
        for column, cell in enumerate(cells):
            red, green, blue, dummy = colours(norm(values[row][column])) if cell is not None else (1, 1, 1, 1)
            # white on the dark ends of the map, black on its light middle
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            axes.text(column, row, _rails_label(cell), ha='center', va='center', fontsize='small',
                      color='dimgrey' if cell is None else ('white' if dark else 'black'))
    axes.set_xticks(range(columns))
    axes.set_xticklabels(matrix['rails'])
    axes.set_yticks(range(rows))
    axes.set_yticklabels(matrix['hosts'])
    axes.tick_params(top=True, labeltop=True, bottom=False, labelbottom=False)
    scale = figure.colorbar(image, ax=axes)
    scale.set_label('best pair bus bandwidth (GB/s)')
    threshold = matrix['threshold_gbs']
    title = 'isolation: best pair busbw per node and rail'
    if threshold is not None:
        scale.ax.axhline(threshold, color='black', linewidth=1.5)
        title += ', threshold %s GB/s' % format_gbs(threshold)
    if matrix['total'] > rows:
        title += '\nthe %d nodes with the lowest cells of %d (report.json has every run)' % (rows, matrix['total'])
    axes.set_title(title, fontsize='medium')
    figure.tight_layout()
    return _png_bytes(figure)
