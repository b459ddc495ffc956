/* projector HTML report.
 *
 * Draws the JSON documents embedded in this page (#projector-data; their fields are described in
 * docs/json-schema.md) with Vega-Lite through vega-embed. Every number shown is read from those
 * documents, the same ones `--json` writes. Inlined into each report by src/report/html_report.cpp.
 *
 * window.projectorReport exposes the rendered Vega views (by chart id) and a `done` promise; the
 * browser test (tests/report/html_browser_test.py) counts the marks of each view through it.
 */
(function() {
'use strict';

const GIB = 1024 * 1024 * 1024;
const report = {
  views: {},
  charts: [],
  errors: []
};
window.projectorReport = report;
window.addEventListener('error', (e) => report.errors.push(String(e.message)));

const data = JSON.parse(document.getElementById('projector-data').textContent);
const docs = data.documents || {};
const app = document.getElementById('app');
const pending = [];

const VEGA_CONFIG = {
  font: 'Liberation Sans, DejaVu Sans, Arial, sans-serif',
  view: {stroke: '#dde1e8'},
  axis: {labelFontSize: 11, titleFontSize: 12, gridColor: '#eef0f3'},
  legend: {labelFontSize: 11, titleFontSize: 12},
  title: {fontSize: 14, anchor: 'start', subtitleColor: '#5d6676'},
};

// ------------------------------------------------------------------------------ DOM helpers
function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class')
      e.className = v;
    else if (k.startsWith('on'))
      e.addEventListener(k.slice(2), v);
    else
      e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function num(v, digits) {
  if (v === null || v === undefined || Number.isNaN(Number(v))) return '–';
  const d = digits === undefined ? 1 : digits;
  return Number(v).toLocaleString('en-US', {minimumFractionDigits: d, maximumFractionDigits: d});
}
const gib = (bytes, d) => num(bytes / GIB, d === undefined ? 2 : d);

function section(title, intro) {
  const s = h('section', {}, h('h2', {}, title), intro ? h('p', {class: 'intro'}, intro) : null);
  app.append(s);
  return s;
}

function card(label, value, note, cls) {
  return h(
      'div', {class: 'card ' + (cls || '')}, h('div', {class: 'label'}, label),
      h('div', {class: 'value'}, value), note ? h('div', {class: 'note'}, note) : null);
}

function verdictClass(verdict) {
  if (verdict === 'FITS') return 'ok';
  if (verdict === 'OOM') return 'bad';
  return verdict ? 'warn' : '';
}

// One Vega-Lite chart; `renderer` canvas for the ones with thousands of marks.
function chart(parent, id, spec, caption, renderer) {
  const box = h('div', {class: 'chart', id: 'chart-' + id});
  parent.append(h('figure', {}, box, caption ? h('figcaption', {}, caption) : null));
  report.charts.push(id);
  const full = Object.assign({config: VEGA_CONFIG, background: 'white'}, spec);
  const options = {
    mode: 'vega-lite',
    renderer: renderer || 'svg',
    actions: {export: true, source: false, compiled: false, editor: false},
  };
  pending.push(vegaEmbed(box, full, options).then((result) => {
    report.views[id] = result.view;
  }));
}

// A table whose columns sort on a click (numbers as numbers).
function table(columns, rows, options) {
  const opts = options || {};
  const head = h('tr', {}, columns.map((c) => h('th', {class: c.num ? 'num' : ''}, c.title)));
  const body = h('tbody', {});
  const render = (list) => {
    body.replaceChildren(...list.map(
        (r) => h('tr', {class: opts.rowClass ? opts.rowClass(r) : ''}, columns.map((c) => {
          const v = c.value(r);
          return h('td', {class: c.num ? 'num' : ''}, c.format ? c.format(v, r) : v);
        }))));
  };
  const t = h('table', {class: 'sortable'}, h('thead', {}, head), body);
  let current = rows.slice();
  head.querySelectorAll('th').forEach((th, i) => {
    th.addEventListener('click', () => {
      const dir = th.dataset.sort === 'asc' ? 'desc' : 'asc';
      head.querySelectorAll('th').forEach((o) => delete o.dataset.sort);
      th.dataset.sort = dir;
      const key = columns[i].value;
      current = current.slice().sort((a, b) => {
        const x = key(a), y = key(b);
        const c = typeof x === 'number' && typeof y === 'number' ?
            x - y :
            String(x).localeCompare(String(y));
        return dir === 'asc' ? c : -c;
      });
      render(current);
    });
  });
  render(current);
  return opts.scroll ? h('div', {class: 'scroll'}, t) : t;
}

function list(items) {
  return h('ul', {class: 'notes'}, items.map((i) => h('li', {}, i)));
}

// ------------------------------------------------------------------------------ header
function layoutFacts(model, nodes, gpusPerNode, accelerator, world, p, runtime) {
  return [
    model,
    `${nodes} × ${gpusPerNode} ${accelerator} (${world} GPUs)`,
    `TP ${p.tp} PP ${p.pp} VPP ${p.vpp} CP ${p.cp} EP ${p.ep} DP ${p.dp}`,
    `MBS ${runtime.micro_batch_size} GBS ${runtime.global_batch_size} seq ${runtime.seq_length}`,
  ].join(' · ');
}

function jobFacts() {
  const job = docs.job;
  const sw = docs.sweep;
  if (sw) {
    return [
      sw.model, `${sw.nodes} × ${sw.gpus_per_node} ${sw.accelerator} (${sw.world_size} GPUs)`,
      `GBS ${sw.global_batch_size} seq ${sw.seq_length}`, 'every legal layout'
    ].join(' · ');
  }
  const perfJob = docs.performance && docs.performance.job;
  if (perfJob) {
    return layoutFacts(
        perfJob.model, perfJob.nodes, perfJob.gpus_per_node, perfJob.accelerator,
        perfJob.world_size, perfJob.parallel, perfJob.runtime);
  }
  if (job && job.cluster) {
    const c = job.cluster;
    return layoutFacts(
        job.model.name, c.nodes, c.gpus_per_node, c.accelerator, c.world_size, job.parallel,
        job.runtime);
  }
  if (docs.validate) return `${docs.validate.runs.length} published runs from ${data.input.path}`;
  return '';
}

function renderHeader() {
  app.append(
      h('header', {class: 'top'}, h('h1', {}, data.title), h('div', {class: 'facts'}, jobFacts())));
}

// ------------------------------------------------------------------------------ memory
function memoryDocument() {
  if (docs.memory) return docs.memory;
  const m = docs.performance && docs.performance.memory;
  return m && m.ranks ? m : null;
}

function rankLabel(r) {
  let l = `pp${r.pp_rank}`;
  if (r.has_embedding) l += ' emb';
  if (r.has_output) l += ' out';
  if (r.mtp_layers > 0) l += ` mtp${r.mtp_layers}`;
  return l;
}

function memoryRows(mem) {
  const rows = [];
  for (const r of mem.ranks) {
    for (const est of ['point', 'upper']) {
      Object.entries(r[est + '_bytes']).forEach(([component, bytes], index) => {
        if (bytes > 0) {
          rows.push({
            rank: rankLabel(r),
            estimate: est,
            component,
            index,
            gib: bytes / GIB,
            total: r[`total_${est}_bytes`] / GIB
          });
        }
      });
    }
  }
  return rows;
}

function renderMemory(mem) {
  const s = section(
      'Memory per GPU',
      'Every pipeline rank class: what each component takes on one GPU, as a point estimate and ' +
          'an upper bound, against the accelerator\'s HBM.');
  const peakRank = mem.ranks[mem.peak.rank];
  const cap = mem.capacity_bytes;
  s.append(
      h('div', {class: 'cards'},
        card(
            'verdict', mem.verdict || 'no verdict',
            cap > 0 ? `HBM ${gib(cap, 0)} GiB` : 'HBM unknown', verdictClass(mem.verdict)),
        card(
            'peak (point)', `${gib(mem.peak.point_bytes)} GiB`,
            `pipeline rank ${rankLabel(peakRank)}`),
        card(
            'peak (upper bound)', `${gib(mem.peak.upper_bytes)} GiB`,
            `pipeline rank ${rankLabel(mem.ranks[mem.peak.upper_rank])}`),
        card('schedule', mem.schedule, `${mem.num_microbatches} microbatches`),
        mem.peak_reserved_gib !== undefined ?
            card(
                'allocator peaks', `${num(mem.peak_allocated_gib, 1)} / ${num(mem.peak_reserved_gib, 1)} GiB`,
                `allocated / reserved (${mem.allocator.kind})`) :
            null));

  const components = Object.keys(mem.ranks[0].point_bytes);
  const order = mem.ranks.map(rankLabel);
  const layers = [{
    name: 'bars',
    data: {values: memoryRows(mem)},
    mark: {type: 'bar', tooltip: true},
    encoding: {
      x: {
        field: 'rank',
        type: 'nominal',
        sort: order,
        title: 'pipeline rank',
        axis: {labelAngle: order.length > 8 ? -45 : 0}
      },
      xOffset: {field: 'estimate', type: 'nominal', sort: ['point', 'upper']},
      y: {field: 'gib', type: 'quantitative', stack: 'zero', title: 'GiB per GPU'},
      color: {
        field: 'component',
        type: 'nominal',
        title: 'component',
        scale: {domain: components, scheme: 'tableau20'}
      },
      opacity: {condition: {test: 'datum.estimate === "upper"', value: 0.5}, value: 1},
      order: {field: 'index', type: 'quantitative'},
      tooltip: [
        {field: 'rank'}, {field: 'estimate'}, {field: 'component'},
        {field: 'gib', title: 'GiB', format: '.2f'},
        {field: 'total', title: 'rank total GiB', format: '.2f'}
      ],
    },
  }];
  if (cap > 0) {
    const line = {values: [{gib: cap / GIB, label: `HBM ${gib(cap, 0)} GiB`}]};
    layers.push({
      name: 'hbm',
      data: line,
      mark: {type: 'rule', color: '#c0392b', strokeDash: [6, 4], strokeWidth: 2},
      encoding: {y: {field: 'gib', type: 'quantitative'}}
    });
    layers.push({
      name: 'hbm_label',
      data: line,
      mark: {
        type: 'text',
        align: 'right',
        baseline: 'bottom',
        dy: -3,
        color: '#c0392b',
        fontWeight: 'bold'
      },
      encoding:
          {y: {field: 'gib', type: 'quantitative'}, x: {value: 'width'}, text: {field: 'label'}}
    });
  }
  const range = mem.peak_memory_gib_interval;
  if (range) {
    // The calibrated 80 % range of the peak (docs/validation.md), drawn on the peak rank.
    const bar = {values: [{rank: rankLabel(peakRank), lo: range[0], hi: range[1]}]};
    layers.push({
      name: 'peak_range',
      data: bar,
      mark: {type: 'rule', color: '#222', strokeWidth: 2},
      encoding: {
        x: {field: 'rank', type: 'nominal', sort: order},
        y: {field: 'lo', type: 'quantitative'},
        y2: {field: 'hi'}
      }
    });
    for (const end of ['lo', 'hi']) {
      layers.push({
        name: 'peak_range_' + end,
        data: bar,
        mark: {type: 'tick', color: '#222', thickness: 2, size: 14},
        encoding: {
          x: {field: 'rank', type: 'nominal', sort: order},
          y: {field: end, type: 'quantitative'}
        }
      });
    }
  }
  chart(
      s, 'memory', {
        title: {
          text: `Per-GPU memory by pipeline rank: ${mem.verdict || 'no verdict'}`,
          subtitle: 'each rank: point estimate (left, solid) and upper bound (right, faded)'
        },
        width: Math.max(420, Math.min(1000, order.length * 56)),
        height: 340,
        layer: layers,
      },
      'Components stack from the bottom in legend order. The upper bound assumes the worst ' +
          'fragmentation and ' +
          'transient buffers the model allows; the dashed line is the HBM capacity.' +
          (range ? ` The black bar on ${rankLabel(peakRank)} is the calibrated 80 % range of ` +
                   `the peak (${num(range[0], 1)} - ${num(range[1], 1)} GiB; regime ` +
                   `${mem.regime.level}, ${mem.regime.runs} runs with a published peak); the ` +
                   `verdict uses it (without it: ${mem.verdict_without_range}).` :
                   ''));

  renderAllocationTimeline(s, mem);

  if (mem.remedies && mem.remedies.length) {
    s.append(h('h3', {}, 'What would make it fit (re-projected)'));
    s.append(table(
        [
          {title: 'change', value: (r) => r.change},
          {title: 'peak GiB', num: true, value: (r) => r.peak_point_bytes, format: (v) => gib(v)},
          {title: 'upper GiB', num: true, value: (r) => r.peak_upper_bytes, format: (v) => gib(v)},
          {
            title: 'verdict',
            value: (r) => r.verdict,
            format: (v) => h('span', {class: 'badge ' + verdictClass(v)}, v)
          },
        ],
        mem.remedies));
  }
}

// The allocation timeline of every pipeline rank: bytes allocated while each of its schedule
// actions runs (docs/memory.md "Timeline"), the peak moment of each rank marked.
function renderAllocationTimeline(s, mem) {
  if (!mem.ranks.length || !mem.ranks[0].timeline_bytes) return;
  const points = [];
  const peaks = [];
  for (const r of mem.ranks) {
    const label = rankLabel(r);
    r.timeline_bytes.forEach((b, i) => points.push({rank: label, action: i, gib: b / GIB}));
    if (r.moment && r.moment.action >= 0) {
      peaks.push({
        rank: label,
        action: r.moment.action,
        gib: r.peak_allocated_bytes / GIB,
        what: `${r.moment.phase} mb ${r.moment.microbatch} chunk ${r.moment.chunk}` +
            (r.moment.temporary ? ` + ${r.moment.temporary}` : ''),
      });
    }
  }
  const order = mem.ranks.map(rankLabel);
  const color = {field: 'rank', type: 'nominal', sort: order, title: 'pipeline rank'};
  chart(
      s, 'memory_timeline', {
        title: {
          text: 'Allocation timeline per pipeline rank (one flush)',
          subtitle: 'allocated GiB while each schedule action runs; dots: each rank\'s peak moment'
        },
        width: 720,
        height: 280,
        layer: [
          {
            name: 'allocated',
            data: {values: points},
            mark: {type: 'line', interpolate: 'step-after', strokeWidth: 1.5},
            encoding: {
              x: {field: 'action', type: 'quantitative', title: 'action of the rank (schedule order)'},
              y: {field: 'gib', type: 'quantitative', title: 'GiB allocated', scale: {zero: false}},
              color: color,
            },
          },
          {
            name: 'peaks',
            data: {values: peaks},
            mark: {type: 'point', filled: true, size: 70, tooltip: true},
            encoding: {
              x: {field: 'action', type: 'quantitative'},
              y: {field: 'gib', type: 'quantitative'},
              color: color,
              tooltip: [
                {field: 'rank'}, {field: 'what', title: 'moment'},
                {field: 'gib', title: 'GiB', format: '.2f'}
              ],
            },
          },
        ],
      },
      'Static buffers, the saved activations held and the running action\'s temporary. ' +
          'The reserved peak adds what the allocator model keeps beyond it (' +
          `${mem.allocator.kind}) and the residual fraction.`,
      points.length > 4000 ? 'canvas' : 'svg');
}

// ------------------------------------------------------------------------------ performance
function renderPerformanceCards(s, perf) {
  const r = perf.results;
  const cards = [
    card(
        'iteration',
        r.iteration_time_ms >= 1000 ? `${num(r.iteration_time_ms / 1000, 3)} s` :
                                      `${num(r.iteration_time_ms, 1)} ms`,
        `${perf.job.runtime.num_microbatches} microbatches per DP rank`),
    card(
        'tokens/s/GPU', num(r.tokens_per_s_per_gpu, 0),
        `${num(r.tokens_per_s, 0)} tokens/s in all` +
            (r.tokens_per_s_per_gpu_interval ?
                 `; ${rangeText(r.tokens_per_s_per_gpu_interval, 0)}` :
                 (r.regime && r.regime.uncalibrated ?
                      `; no calibrated 80 % range: ${r.regime.uncalibrated}` :
                      ''))),
    card('MFU', `${num(r.mfu_pct, 1)} %`, `of the ${r.mfu_dtype} dense peak`),
    card(
        'model TFLOP/s/GPU', num(r.model_tflops_per_gpu, 1),
        `hardware ${num(r.hardware_tflops_per_gpu, 1)} (incl. recompute)`),
    card('pipeline idle', `${num(100 * r.bubble_fraction, 1)} %`, 'busiest rank, of the makespan'),
  ];
  const skew = perf.routing_skew;
  if (skew) {
    // Dropless MoE with EP: the same job with the busiest EP rank at load_factor x the mean tokens.
    cards.push(card(
        'skewed routing', num(skew.tokens_per_s_per_gpu, 0),
        `tokens/s/GPU if the busiest EP rank gets ${num(skew.load_factor, 2)}x the mean ` +
            `routed tokens (above: balanced)`));
  }
  const m = perf.memory;
  if (m) {
    cards.push(card(
        'peak memory',
        `${gib(m.peak_point_bytes !== undefined ? m.peak_point_bytes : m.peak.point_bytes)} GiB`,
        m.verdict + (m.peak_memory_gib_interval ? `; ${rangeText(m.peak_memory_gib_interval, 1)} GiB` : ''),
        verdictClass(m.verdict)));
  }
  const plan = r.time_to_train;
  if (plan) cards.push(...planCards(plan));
  s.append(h('div', {class: 'cards'}, cards));
  if (r.tokens_per_s_per_gpu_interval) renderThroughputRange(s, r);
  s.append(
      h('p', {class: 'hint'},
        `Schedule ${perf.job.schedule.algorithm} (${perf.job.schedule.reason}); precision ` +
            `${perf.job.runtime.precision}; recompute ${perf.job.runtime.recompute}.`));
}

function rangeText(iv, digits) {
  return iv ? `80 %: ${num(iv[0], digits)} - ${num(iv[1], digits)}` : 'no calibrated range';
}

// --train-tokens / --gpu-hour-cost: time to train, GPU-hours, cost and board energy.
function planCards(p) {
  const out = [
    card(
        'time to train', `${num(p.days, 1)} days`,
        `${num(p.train_tokens / 1e9, 0)} B tokens on ${num(p.gpus, 0)} GPUs; ` +
            rangeText(p.days_interval, 1)),
    card('GPU-hours', num(p.gpu_hours, 0), rangeText(p.gpu_hours_interval, 0)),
  ];
  if (p.cost_usd !== null) {
    out.push(card(
        'cost', `${num(p.cost_usd, 0)} USD`,
        `at ${p.gpu_hour_cost_usd} USD per GPU-hour; ${rangeText(p.cost_usd_interval, 0)}`));
  }
  out.push(
      p.energy_mwh !== null ?
          card(
              'energy (GPU boards)', `${num(p.energy_mwh, 1)} MWh`,
              `${p.board_power_w} W per GPU (${p.board_power_source}); ` +
                  rangeText(p.energy_mwh_interval, 1)) :
          card('energy', 'not projected', 'no board power in the catalogue'));
  return out;
}

// The headline throughput with its calibrated 80 % range as an error bar.
function renderThroughputRange(s, r) {
  const rows = [{
    metric: 'tokens/s/GPU',
    value: r.tokens_per_s_per_gpu,
    lo: r.tokens_per_s_per_gpu_interval[0],
    hi: r.tokens_per_s_per_gpu_interval[1]
  }];
  const y = {field: 'metric', type: 'nominal', title: null};
  chart(
      s, 'throughput_range', {
        data: {values: rows},
        width: 640,
        height: 60,
        layer: [
          {
            name: 'point',
            mark: {type: 'bar', color: '#4c78a8', tooltip: true},
            encoding: {
              y,
              x: {field: 'value', type: 'quantitative', title: 'tokens/s/GPU'},
              tooltip: [
                {field: 'value', title: 'projected', format: ',.0f'},
                {field: 'lo', title: '80 % low', format: ',.0f'},
                {field: 'hi', title: '80 % high', format: ',.0f'}
              ]
            }
          },
          {
            name: 'range',
            mark: {type: 'rule', color: '#222', strokeWidth: 2},
            encoding: {y, x: {field: 'lo', type: 'quantitative'}, x2: {field: 'hi'}}
          },
          ...['lo', 'hi'].map((end) => ({
            name: 'range_' + end,
            mark: {type: 'tick', color: '#222', thickness: 2, orient: 'vertical'},
            encoding: {y, x: {field: end, type: 'quantitative'}}
          }))
        ]
      },
      `Projected tokens/s/GPU and its calibrated 80 % range (regime ${r.regime.level}, ` +
          `${r.regime.runs} published runs scored leave-one-family-out; docs/validation.md).`);
}

function compositionRows(perf) {
  const res = perf.results;
  const rows = [];
  for (const r of perf.ranks) {
    const rank = `pp${r.pp_rank}`;
    const wait =
        res.iteration_time_ms - res.pipeline_time_ms - r.optimizer_ms - res.param_gather_exposed_ms;
    const parts = [
      ['compute (incl. exposed in-layer comm)', r.busy_ms],
      ['pipeline idle (bubbles, waits)', r.idle_ms], ['optimizer step', r.optimizer_ms],
      ['parameter all-gather (exposed)', res.param_gather_exposed_ms],
      ['waiting for the slowest optimizer', wait > 1e-9 ? wait : 0]
    ];
    parts.forEach(([part, ms], i) => {
      if (ms > 0) rows.push({rank, part, ms, order: i});
    });
  }
  return rows;
}

function renderComposition(s, perf) {
  const parts = [
    'compute (incl. exposed in-layer comm)', 'pipeline idle (bubbles, waits)', 'optimizer step',
    'parameter all-gather (exposed)', 'waiting for the slowest optimizer'
  ];
  const iter = perf.results.iteration_time_ms;
  const exposed = ['tp', 'cp', 'ep', 'pp', 'dp', 'offload'].map(
      (g) => ({
        group: g === 'offload' ? 'host offload' : g.toUpperCase(),
        ms: perf.exposed_comm_ms[g],
        label: `${num(perf.exposed_comm_ms[g], 1)} ms`,
      }));
  const row = h('div', {class: 'row'});
  s.append(row);
  chart(
      row, 'composition', {
        title: {
          text: 'Iteration time composition per pipeline rank',
          subtitle: `iteration ${num(iter, 1)} ms (dashed)`
        },
        width: 520,
        height: Math.max(120, perf.ranks.length * 24),
        layer: [
          {
            name: 'parts',
            data: {values: compositionRows(perf)},
            mark: {type: 'bar', tooltip: true},
            encoding: {
              y: {
                field: 'rank',
                type: 'nominal',
                sort: perf.ranks.map((r) => `pp${r.pp_rank}`),
                title: 'pipeline rank'
              },
              x: {field: 'ms', type: 'quantitative', stack: 'zero', title: 'ms'},
              color: {
                field: 'part',
                type: 'nominal',
                title: null,
                scale:
                    {domain: parts, range: ['#4c78a8', '#e45756', '#72b7b2', '#f58518', '#bab0ac']},
                legend: {orient: 'bottom', columns: 2, labelLimit: 260}
              },
              order: {field: 'order'},
              tooltip: [{field: 'rank'}, {field: 'part'}, {field: 'ms', format: ',.1f'}],
            },
          },
          {
            name: 'iteration',
            data: {values: [{ms: iter}]},
            mark: {type: 'rule', strokeDash: [5, 4], color: '#1d2330'},
            encoding: {x: {field: 'ms', type: 'quantitative'}},
          }
        ],
      },
      'Compute includes the in-layer TP/CP/EP communication it could not hide; idle is time a ' +
          'rank waits for its pipeline neighbours.');
  chart(
      row, 'exposed', {
        title:
            {text: 'Exposed communication by group', subtitle: 'ms per iteration, critical rank'},
        width: 300,
        height: 170,
        data: {values: exposed},
        layer: [
          {
            name: 'groups',
            mark: {type: 'bar', color: '#e45756', tooltip: true},
            encoding: {
              y: {field: 'group', type: 'nominal', sort: null, title: null},
              x: {field: 'ms', type: 'quantitative', title: 'ms'}
            },
          },
          {
            name: 'group_labels',
            mark: {type: 'text', align: 'left', dx: 4},
            encoding: {
              y: {field: 'group', type: 'nominal', sort: null},
              x: {field: 'ms', type: 'quantitative'},
              text: {field: 'label'}
            },
          }
        ],
      },
      'Communication not overlapped with compute, per process group (TP includes ETP).');
}

// The Chrome trace document -> one row per (rank, stream) event.
function timelineEvents(trace) {
  const streams = {};
  for (const e of trace.traceEvents) {
    if (e.ph === 'M' && e.name === 'thread_name') streams[`${e.pid}:${e.tid}`] = e.args.name;
  }
  const events = [];
  for (const e of trace.traceEvents) {
    if (e.ph !== 'X') continue;
    const stream = streams[`${e.pid}:${e.tid}`] || `stream ${e.tid}`;
    const m = /^(F|B|W|BW) c(\d+) mb(\d+)/.exec(e.name);
    let kind;
    if (m)
      kind = m[1];
    else if (e.name === 'optimizer.step')
      kind = 'optimizer';
    else
      kind = e.name.split(' ')[0];
    events.push({
      row: `rank ${e.pid} · ${stream}`,
      rank: e.pid,
      tid: e.tid,
      name: e.name,
      kind,
      chunk: m ? Number(m[2]) : 0,
      start: e.ts / 1000,
      end: (e.ts + e.dur) / 1000,
      duration: e.dur / 1000,
    });
  }
  return events;
}

function renderTimeline(s, trace) {
  const events = timelineEvents(trace);
  const rows = [...new Map(events.map((e) => [e.row, e])).values()]
                   .sort((a, b) => a.rank - b.rank || a.tid - b.tid)
                   .map((e) => e.row);
  const compute = ['F', 'B', 'W', 'BW', 'optimizer'];
  const comm = [...new Set(events.map((e) => e.kind))].filter((k) => !compute.includes(k)).sort();
  const domain = compute.filter((k) => events.some((e) => e.kind === k)).concat(comm);
  const palette = {F: '#4c78a8', B: '#f58518', W: '#54a24b', BW: '#e45756', optimizer: '#79706e'};
  const extra = ['#72b7b2', '#b279a2', '#9d755d', '#eeca3b', '#ff9da6', '#bab0ac'];
  const range = domain.map((k) => palette[k] || extra[comm.indexOf(k) % extra.length]);
  chart(
      s, 'timeline', {
        title: {
          text: 'Pipeline timeline (simulated iteration)',
          subtitle: 'scroll to zoom, drag to pan, double-click to reset; hover for details'
        },
        width: 960,
        height: Math.max(80, rows.length * 16),
        data: {values: events},
        params: [{name: 'zoom', select: {type: 'interval', encodings: ['x']}, bind: 'scales'}],
        layer: [{
          name: 'events',
          mark: {type: 'bar', clip: true, tooltip: true},
          encoding: {
            y: {field: 'row', type: 'nominal', sort: rows, title: null, axis: {labelLimit: 220}},
            x: {field: 'start', type: 'quantitative', title: 'time in the iteration (ms)'},
            x2: {field: 'end'},
            color: {
              field: 'kind',
              type: 'nominal',
              title: 'event',
              scale: {domain, range},
              legend: {labelLimit: 160}
            },
            opacity: {condition: {test: 'datum.chunk % 2 == 1', value: 0.55}, value: 1},
            tooltip: [
              {field: 'name', title: 'event'}, {field: 'row', title: 'rank · stream'},
              {field: 'start', title: 'start ms', format: ',.2f'},
              {field: 'duration', title: 'duration ms', format: ',.3f'}
            ],
          },
        }],
      },
      'One row per pipeline rank and stream: compute (F forward, B backward, W weight ' +
          'gradient, BW combined backward; odd virtual chunks faded) and each communication ' +
          'stream. In-layer TP/CP/EP communication is inside the compute events.',
      'canvas');
}

function renderScaling(s, perf) {
  const ok = perf.scaling.filter((p) => p.error === undefined).map((p) => {
    const iv = p.tokens_per_s_per_gpu_interval;
    return Object.assign({}, p, {lo: iv ? iv[0] : 0, hi: iv ? iv[1] : 0});
  });
  const failed = perf.scaling.filter((p) => p.error !== undefined);
  if (ok.length) {
    const nodes = ok.map((p) => p.nodes);
    const xEnc = {
      field: 'nodes',
      type: 'quantitative',
      title: 'nodes',
      scale: {
        type: 'log',
        base: 2,
        nice: false,
        domain: [Math.min(...nodes) / 1.2, Math.max(...nodes) * 1.2]
      },
      axis: {values: nodes, format: 'd'}
    };
    const panel = (name, field, title, format) => ({
      width: 440,
      height: 220,
      title,
      layer: [
        ...(field === 'tokens_per_s_per_gpu' && ok.some((p) => p.lo > 0) ?
                [{
                  name: name + '_band',
                  transform: [{filter: 'datum.lo > 0'}],
                  mark: {type: 'area', color: '#4c78a8', opacity: 0.18},
                  encoding: {
                    x: xEnc,
                    y: {field: 'lo', type: 'quantitative'},
                    y2: {field: 'hi'}
                  }
                }] :
                []),
        {
          name: name + '_line',
          mark: {type: 'line', color: '#4c78a8'},
          encoding: {x: xEnc, y: {field, type: 'quantitative', title, scale: {zero: true}}}
        },
        {
          name: name + '_points',
          mark: {type: 'point', filled: true, size: 60, color: '#4c78a8', tooltip: true},
          encoding: {
            x: xEnc,
            y: {field, type: 'quantitative'},
            tooltip: [
              {field: 'nodes'}, {field: 'world_size', title: 'GPUs'}, {field: 'dp', title: 'DP'},
              {field: 'num_microbatches', title: 'microbatches per DP rank'},
              {field, title, format}, {field: 'speedup', format: '.2f'}
            ]
          }
        },
      ],
    });
    chart(
        s, 'scaling', {
          data: {values: ok},
          hconcat: [
            panel('tps', 'tokens_per_s_per_gpu', 'tokens/s/GPU', ',.0f'),
            panel('mfu', 'mfu_pct', 'MFU %', '.1f')
          ],
        },
        'Strong scaling over data parallelism (--scan-nodes): the global batch is fixed, so more ' +
            'nodes mean fewer microbatches per DP rank and a larger pipeline bubble share. The ' +
            'shaded band is the calibrated 80 % range of tokens/s/GPU at each size.');
  }
  if (failed.length) s.append(list(failed.map((p) => `${p.nodes} node(s): ${p.error}`)));
}

function renderPerformance(perf) {
  const s = section(
      'Performance',
      'The simulated iteration: compute and communication streams of every pipeline rank.');
  renderPerformanceCards(s, perf);
  renderComposition(s, perf);
  if (docs.trace) renderTimeline(s, docs.trace);
  if (perf.scaling && perf.scaling.length) {
    s.append(h('h3', {}, 'Scaling with the node count'));
    renderScaling(s, perf);
  }
}

// ------------------------------------------------------------------------------ sweep
function layoutText(l) {
  let t = `TP${l.tp} PP${l.pp}`;
  if (l.vpp > 1) t += ` VPP${l.vpp}`;
  if (l.cp > 1) t += ` CP${l.cp}`;
  if (l.ep > 1) t += ` EP${l.ep}`;
  if (l.etp > 1) t += ` ETP${l.etp}`;
  return `${t} DP${l.dp} MBS${l.mbs} ${l.schedule} rc:${l.recompute} ${l.sharding}`;
}

function renderSweep(sw) {
  const s = section(
      'Layout sweep',
      `Every legal layout of ${sw.model} on ${sw.nodes} node(s) × ${sw.gpus_per_node} ` +
          `${sw.accelerator}; GBS ${sw.global_batch_size}, seq ${sw.seq_length}; ` +
          `ranked by ${sw.objective}.`);
  const c = sw.counts;
  const best = sw.candidates[0];
  s.append(
      h('div', {class: 'cards'},
        card('projected', num(c.projected, 0), `of ${num(c.enumerated, 0)} enumerated`),
        card('illegal', num(c.illegal, 0), 'rule violations'),
        card(
            'out of memory', num(c.oom, 0),
            `limit ${gib(sw.memory_limit_bytes, 1)} GiB (${sw.pruned_on})`),
        best ? card(
                   'best tokens/s/GPU', num(best.tokens_per_s_per_gpu, 0), layoutText(best.layout),
                   'ok') :
               card('best', 'none fits', '', 'bad'),
        card('Pareto front', num(sw.pareto_ranks.length, 0), 'layouts')));
  if (sw.html_candidates_total) {
    s.append(
        h('p', {class: 'hint'},
          `This page shows the best ${num(sw.html_candidates_shown, 0)} of ` +
              `${num(sw.html_candidates_total, 0)} projected layouts and the whole Pareto front; ` +
              '--json and --csv hold them all.'));
  }
  if (!best) return;
  const rows = sw.candidates.map((x) => ({
                                   rank: x.rank,
                                   peak: x.peak_point_bytes / GIB,
                                   upper: x.peak_upper_bytes / GIB,
                                   tps: x.tokens_per_s_per_gpu,
                                   lo: x.tokens_per_s_per_gpu_interval ?
                                       x.tokens_per_s_per_gpu_interval[0] :
                                       null,
                                   hi: x.tokens_per_s_per_gpu_interval ?
                                       x.tokens_per_s_per_gpu_interval[1] :
                                       null,
                                   mfu: 100 * x.mfu,
                                   iter: x.iteration_s,
                                   front: x.pareto ? 'Pareto front' : 'dominated',
                                   layout: layoutText(x.layout),
                                 }));
  const front = rows.filter((r) => r.front === 'Pareto front').sort((a, b) => a.peak - b.peak);
  rows.sort(
      (a, b) =>
          (a.front === b.front         ? 0 :
               a.front === 'dominated' ? -1 :
                                         1));  // front on top
  const layers = [
    {
      name: 'points',
      data: {values: rows},
      mark: {type: 'circle', size: 28, tooltip: true},
      encoding: {
        x: {
          field: 'peak',
          type: 'quantitative',
          title: 'peak memory per GPU (GiB, point estimate)',
          scale: {zero: false}
        },
        y: {field: 'tps', type: 'quantitative', title: 'tokens/s/GPU', scale: {zero: false}},
        color: {
          field: 'front',
          type: 'nominal',
          title: null,
          scale: {domain: ['Pareto front', 'dominated'], range: ['#e07b00', '#9aa5b1']}
        },
        opacity: {condition: {test: 'datum.front === "dominated"', value: 0.45}, value: 1},
        tooltip: [
          {field: 'rank', title: '#'}, {field: 'layout'},
          {field: 'tps', title: 'tokens/s/GPU', format: ',.0f'},
          {field: 'mfu', title: 'MFU %', format: '.1f'},
          {field: 'peak', title: 'peak GiB', format: '.2f'},
          {field: 'upper', title: 'upper GiB', format: '.2f'}
        ],
      },
      params: [{name: 'zoom', select: 'interval', bind: 'scales'}]
    },
    {
      name: 'front',
      data: {values: front},
      mark: {type: 'line', color: '#e07b00', strokeWidth: 2, interpolate: 'step-after'},
      encoding: {x: {field: 'peak', type: 'quantitative'}, y: {field: 'tps', type: 'quantitative'}}
    },
    {
      // The calibrated 80 % range of the Pareto layouts (docs/validation.md).
      name: 'front_range',
      data: {values: front.filter((r) => r.lo !== null)},
      mark: {type: 'rule', color: '#e07b00', opacity: 0.6},
      encoding: {
        x: {field: 'peak', type: 'quantitative'},
        y: {field: 'lo', type: 'quantitative'},
        y2: {field: 'hi'}
      }
    },
    {
      name: 'best',
      data: {values: [rows[0]]},
      mark: {type: 'point', shape: 'diamond', size: 160, filled: true, color: '#c0392b'},
      encoding: {x: {field: 'peak', type: 'quantitative'}, y: {field: 'tps', type: 'quantitative'}}
    },
  ];
  if (sw.memory_limit_bytes > 0) {
    layers.push({
      name: 'limit',
      data: {values: [{gib: sw.memory_limit_bytes / GIB}]},
      mark: {type: 'rule', color: '#c0392b', strokeDash: [6, 4]},
      encoding: {x: {field: 'gib', type: 'quantitative'}}
    });
  }
  chart(
      s, 'sweep', {
        title: {
          text: 'Throughput vs peak memory',
          subtitle: 'orange: Pareto front (no layout is both faster and lighter) with its ' +
              'calibrated 80 % ranges; red diamond: best; dashed: memory limit. Drag to pan, ' +
              'scroll to zoom.'
        },
        width: 900,
        height: 420,
        layer: layers,
      },
      'Each point is one projected layout.', 'canvas');

  const top = sw.candidates.slice(0, Math.max(1, data.top_k));
  s.append(h('h3', {}, `Top ${top.length} by ${sw.objective} (click a column to sort)`));
  const L = (k) => (x) => x.layout[k];
  s.append(table(
      [
        {title: '#', num: true, value: (x) => x.rank},
        {title: 'TP', num: true, value: L('tp')},
        {title: 'PP', num: true, value: L('pp')},
        {title: 'VPP', num: true, value: L('vpp')},
        {title: 'CP', num: true, value: L('cp')},
        {title: 'EP', num: true, value: L('ep')},
        {title: 'ETP', num: true, value: L('etp')},
        {title: 'DP', num: true, value: L('dp')},
        {title: 'MBS', num: true, value: L('mbs')},
        {title: 'schedule', value: L('schedule')},
        {title: 'recompute', value: L('recompute')},
        {title: 'sharding', value: L('sharding')},
        {
          title: 'tokens/s/GPU',
          num: true,
          value: (x) => x.tokens_per_s_per_gpu,
          format: (v) => num(v, 0)
        },
        {title: 'iteration s', num: true, value: (x) => x.iteration_s, format: (v) => num(v, 3)},
        {title: 'MFU %', num: true, value: (x) => 100 * x.mfu, format: (v) => num(v, 1)},
        {
          title: 'peak GiB',
          num: true,
          value: (x) => x.peak_point_bytes / GIB,
          format: (v) => num(v, 2)
        },
        {
          title: 'upper GiB',
          num: true,
          value: (x) => x.peak_upper_bytes / GIB,
          format: (v) => num(v, 2)
        },
        {
          title: 'bubble %',
          num: true,
          value: (x) => 100 * x.bubble_fraction,
          format: (v) => num(v, 1)
        },
        {title: 'Pareto', value: (x) => (x.pareto ? 'yes' : '')},
      ],
      top, {rowClass: (x) => (x.pareto ? 'pareto' : ''), scroll: top.length > 25}));
  const rules = Object.entries(c.illegal_by_rule || {});
  if (rules.length) {
    s.append(h('h3', {}, 'Illegal layouts by rule'));
    s.append(table(
        [
          {title: 'rule', value: (r) => r[0]},
          {title: 'layouts', num: true, value: (r) => r[1], format: (v) => num(v, 0)}
        ],
        rules));
  }
}

// ------------------------------------------------------------------------------ validate
function validationPoints(v) {
  const pts = [];
  for (const r of v.runs) {
    const err = r.throughput_error_pct;
    const pred = r.predicted && r.predicted.tokens_per_sec_per_gpu;
    if (err === null || err === undefined || !(pred > 0)) continue;
    // The throughput error is predicted / measured - 1 on the best published metric, so this is
    // the measured tokens/s/GPU that metric implies.
    pts.push({
      id: r.id,
      predicted: pred,
      measured: pred / (1 + err / 100),
      error: err,
      basis: r.throughput_basis,
      family: r.regime.accelerator_family,
      model: r.regime.moe ? 'MoE' : 'dense',
      gpus: r.regime.num_gpus
    });
  }
  return pts;
}

function renderValidationScatter(s, pts) {
  const all = pts.flatMap((p) => [p.predicted, p.measured]);
  const lo = Math.min(...all) / 1.4, hi = Math.max(...all) * 1.4;
  const band = [lo, hi].map(
      (x) => ({x, y: x, lo10: 0.9 * x, hi10: 1.1 * x, lo25: 0.75 * x, hi25: 1.25 * x}));
  const axis = (field, title) =>
      ({field, type: 'quantitative', title, scale: {type: 'log', domain: [lo, hi], nice: false}});
  chart(
      s, 'validation', {
        title: {
          text: 'Predicted vs measured throughput',
          subtitle: 'bands: within 10 % (dark) and 25 % (light) of the measurement'
        },
        width: 440,
        height: 440,
        layer: [
          {
            name: 'band25',
            data: {values: band},
            mark: {type: 'area', color: '#e3edf7', clip: true},
            encoding: {
              x: axis('x', 'measured tokens/s/GPU'),
              y: axis('lo25', 'predicted tokens/s/GPU'),
              y2: {field: 'hi25'}
            }
          },
          {
            name: 'band10',
            data: {values: band},
            mark: {type: 'area', color: '#a7c4e2', clip: true},
            encoding: {x: axis('x'), y: axis('lo10'), y2: {field: 'hi10'}}
          },
          {
            name: 'diagonal',
            data: {values: band},
            mark: {type: 'line', color: '#1d2330', strokeDash: [4, 3], clip: true},
            encoding: {x: axis('x'), y: axis('y')}
          },
          {
            name: 'runs',
            data: {values: pts},
            mark: {type: 'point', filled: true, size: 70, opacity: 0.9, tooltip: true},
            encoding: {
              x: axis('measured'),
              y: axis('predicted'),
              color: {
                field: 'family',
                type: 'nominal',
                title: 'accelerator',
                scale: {
                  domain: ['AMD', 'NVIDIA', 'TPU', 'other'],
                  range: ['#e45756', '#54a24b', '#4c78a8', '#79706e']
                }
              },
              shape: {
                field: 'model',
                type: 'nominal',
                title: 'model',
                scale: {domain: ['dense', 'MoE'], range: ['circle', 'triangle-up']}
              },
              tooltip: [
                {field: 'id'}, {field: 'basis', title: 'compared on'},
                {field: 'error', title: 'error %', format: '+.1f'},
                {field: 'predicted', title: 'predicted tokens/s/GPU', format: ',.0f'},
                {field: 'measured', title: 'measured (implied) tokens/s/GPU', format: ',.0f'},
                {field: 'gpus', title: 'GPUs'}
              ],
            }
          },
        ],
      },
      'Each run is compared on its best published metric (tokens/s, step time, TFLOP/s or MFU); ' +
          'the measured tokens/s/GPU shown is the one that metric implies.');
}

function renderRegimes(s, v) {
  const sum = v.summary;
  const rows = [{regime: 'all runs', ...sum.throughput}].concat(
      sum.by_regime.map((g) => ({regime: `${g.group}: ${g.value}`, ...g})));
  rows.forEach((r) => {
    r.label = `${num(r.mape_pct, 1)} % (n=${r.count})`;
  });
  chart(
      s, 'regimes', {
        title: {text: 'Throughput error by regime', subtitle: 'bar: MAPE; tick: 90th percentile'},
        width: 300,
        height: rows.length * 22,
        data: {values: rows},
        layer: [
          {
            name: 'regime_bars',
            mark: {type: 'bar', color: '#4c78a8', tooltip: true},
            encoding: {
              y: {field: 'regime', type: 'nominal', sort: null, title: null},
              x: {field: 'mape_pct', type: 'quantitative', title: '|error| %'},
              tooltip: [
                {field: 'regime'}, {field: 'count', title: 'runs'},
                {field: 'mape_pct', title: 'MAPE %', format: '.1f'},
                {field: 'median_abs_pct', title: 'median %', format: '.1f'},
                {field: 'p90_abs_pct', title: 'P90 %', format: '.1f'},
                {field: 'mean_signed_pct', title: 'bias %', format: '+.1f'}
              ]
            }
          },
          {
            name: 'regime_p90',
            mark: {type: 'tick', color: '#1d2330', thickness: 2},
            encoding: {
              y: {field: 'regime', type: 'nominal', sort: null},
              x: {field: 'p90_abs_pct', type: 'quantitative'}
            }
          },
          {
            name: 'regime_labels',
            mark: {type: 'text', align: 'left', dx: 4, fontSize: 10},
            encoding: {
              y: {field: 'regime', type: 'nominal', sort: null},
              x: {field: 'p90_abs_pct', type: 'quantitative'},
              text: {field: 'label'}
            }
          },
        ],
      },
      'Groups overlap: a run counts in its model, accelerator, scale and parallelism groups.');
}

function renderValidate(v) {
  const s = section(
      'Validation against published runs',
      'Each published run is mapped to a job, projected, and compared with its measurement.');
  const sum = v.summary;
  const pts = validationPoints(v);
  const within = (p) => pts.filter((x) => Math.abs(x.error) <= p).length;
  const t = sum.throughput;
  const bias = (t.mean_signed_pct >= 0 ? '+' : '') + num(t.mean_signed_pct, 1);
  s.append(
      h('div', {class: 'cards'},
        card(
            'compared', `${sum.compared} of ${sum.runs}`,
            `${sum.unmapped} unmapped, ${sum.invalid} invalid, ${sum.projection_failed} failed`),
        card(
            'throughput MAPE', `${num(sum.throughput.mape_pct, 1)} %`,
            `median ${num(t.median_abs_pct, 1)} %, P90 ${num(t.p90_abs_pct, 1)} %`),
        card('bias', `${bias} %`, '> 0: projections too optimistic'),
        card('within 10 %', `${within(10)} of ${pts.length}`, `within 25 %: ${within(25)}`),
        sum.memory.count ? card(
                               'peak memory MAPE', `${num(sum.memory.mape_pct, 1)} %`,
                               `${sum.memory.count} runs publish it`) :
                           null));
  if (pts.length) {
    const row = h('div', {class: 'row'});
    s.append(row);
    renderValidationScatter(row, pts);
    renderRegimes(row, v);
  }
  s.append(h('h3', {}, 'Runs (click a column to sort)'));
  s.append(table(
      [
        {title: 'run', value: (r) => r.id},
        {title: 'status', value: (r) => r.status},
        {title: 'compared on', value: (r) => r.throughput_basis || ''},
        {
          title: 'predicted tokens/s/GPU',
          num: true,
          value: (r) => (r.predicted && r.predicted.tokens_per_sec_per_gpu) || 0,
          format: (x) => num(x, 0)
        },
        {
          title: 'throughput error %',
          num: true,
          value: (r) =>
              (r.throughput_error_pct === null || r.throughput_error_pct === undefined ?
                   -Infinity :
                   r.throughput_error_pct),
          format: (x) => (x === -Infinity ? '–' : num(x, 1))
        },
        {
          title: 'memory error %',
          num: true,
          value: (r) => (
              r.memory_error_pct === null || r.memory_error_pct === undefined ? -Infinity :
                                                                                r.memory_error_pct),
          format: (x) => (x === -Infinity ? '–' : num(x, 1))
        },
        {
          title: 'assumptions / reason',
          value: (r) => r.assumptions.length,
          format: (x, r) =>
              (r.reason ?
                   r.reason :
                   h('details', {}, h('summary', {}, `${x} assumption(s)`), list(r.assumptions)))
        },
      ],
      v.runs, {scroll: true}));
}

// ------------------------------------------------------------------------------ assumptions
function defaultsTable(defaults) {
  return table(
      [
        {title: 'key', value: (d) => d.key, format: (v) => h('code', {}, v)},
        {title: 'value', value: (d) => d.value, format: (v) => h('code', {}, v)},
        {title: 'why', value: (d) => d.reason}
      ],
      defaults, {scroll: defaults.length > 20});
}

function renderAssumptions(mem) {
  const perf = docs.performance;
  const notes = [].concat(perf ? perf.notes || [] : [], mem ? mem.notes || [] : []);
  const warnings =
      (perf && perf.warnings) || (mem && mem.warnings) || (docs.job && docs.job.warnings) || [];
  const defaults =
      (perf && perf.defaults) || (mem && mem.defaults) || (docs.job && docs.job.defaults) || [];
  if (!notes.length && !warnings.length && !defaults.length && !mem) return;
  const s = section(
      'Assumptions and defaults',
      'What the projection assumed, and every value the input did not state.');
  if (warnings.length) {
    s.append(h('h3', {}, 'Warnings'));
    s.append(list(warnings));
  }
  if (notes.length) {
    s.append(h('h3', {}, 'Assumptions'));
    s.append(list([...new Set(notes)]));
  }
  if (mem && mem.sources) {
    s.append(h('h3', {}, 'How each memory component is modelled'));
    s.append(table(
        [{title: 'component', value: (r) => r[0]}, {title: 'source', value: (r) => r[1]}],
        Object.entries(mem.sources).filter((r) => r[1])));
  }
  if (defaults.length) {
    s.append(h('h3', {}, `Defaults applied (${defaults.length})`));
    s.append(defaultsTable(defaults));
  }
}

// ------------------------------------------------------------------------------ inputs
function downloadLink(name, doc) {
  const blob = new Blob([JSON.stringify(doc, null, 2)], {type: 'application/json'});
  return h(
      'a', {class: 'download', href: URL.createObjectURL(blob), download: `${name}.json`},
      `${name}.json`);
}

function renderInputs() {
  const s =
      section('Inputs', 'What this report was made from; the file alone explains the result.');
  s.append(h('h3', {}, 'Command'), h('pre', {class: 'command'}, h('code', {}, data.command)));
  if (data.input && data.input.path) {
    s.append(h('h3', {}, `Input file: ${data.input.path}`));
    if (data.input.text) {
      s.append(
          h('details', {}, h('summary', {}, 'show the file as it was read'),
            h('pre', {}, h('code', {}, data.input.text))));
    }
  }
  if (docs.job) {
    s.append(h('h3', {}, 'Resolved job'));
    s.append(
        h('details', {}, h('summary', {}, 'show the resolved job (projector config --json)'),
          h('pre', {}, h('code', {}, JSON.stringify(docs.job, null, 2)))));
  }
  s.append(h('h3', {}, 'The JSON documents drawn here (docs/json-schema.md)'));
  s.append(h('p', {}, Object.entries(docs).map(([name, doc]) => downloadLink(name, doc))));
}

// ------------------------------------------------------------------------------ main
function render() {
  renderHeader();
  const mem = memoryDocument();
  if (mem) renderMemory(mem);
  if (docs.performance) renderPerformance(docs.performance);
  if (docs.sweep) renderSweep(docs.sweep);
  if (docs.validate) renderValidate(docs.validate);
  renderAssumptions(mem);
  renderInputs();
  app.append(
      h('footer', {},
        `Made by projector; charts drawn offline with Vega ${vega.version}, Vega-Lite ` +
            `${vegaLite.version} and vega-embed ${vegaEmbed.version}, inlined in this file.`));
}

try {
  render();
} catch (err) {
  pending.push(Promise.reject(err));
}
report.done = Promise.all(pending).then(
    () => {
      report.renderMs = performance.now();
      document.body.dataset.state = 'done';
      return {charts: report.charts, renderMs: report.renderMs};
    },
    (err) => {
      document.body.dataset.state = 'error';
      report.errors.push(String(err && err.stack ? err.stack : err));
      console.error('projector report:', err);
      throw err;
    });
})();
