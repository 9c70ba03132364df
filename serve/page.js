/* serve/page.js — the web UI's logic (put inline into page.html at build time). Talks only to
 * this server's /api (serve/serve.h). Every text from the server or a trace goes in through
 * textContent, never as HTML. The answer's numbers are the server's (report/: speed-up,
 * efficiency, holdback, waits, what-if change, memory per GPU; docs/webui.md): the page formats
 * them and derives none. */
'use strict';
const $ = (id) => document.getElementById(id);
const state = { options: null, values: null, traces: [], summary: null, history: [], polling: null, running: null };

/* The cluster presets: the DGX boxes (their GPU, GPUs per node, bandwidths) come from the server's
 * topology table (netmodels/presets.c, GET /api/options values.presets: fromServer below); the
 * wafer's GPUs, ports, bandwidth and circuit set-up are the photonic model's defaults (values.photonic,
 * netmodels/photonic.h), on examples/wafer_scale.sh's A100-class GPU. */
const PRESETS = {
  'dgx-h100': { topo: 'dgx-h100', nodes: 1 },
  'dgx-a100': { topo: 'dgx-a100', nodes: 1 },
  'wafer': { photonic: true, gpu: 'A100-80GB', nodes: 1 },
  'custom': { custom: true, help: 'Any number of nodes: NVSwitch inside a node, one network card per GPU between nodes.' },
};

/* Requests that change the server carry its token (serve/guard.h: an upload needs it). */
const TOKEN = (document.querySelector('meta[name="mitosis-token"]') || {}).content || '';

async function api(path, opts) {
  if (opts && opts.method && opts.method !== 'GET') opts.headers = Object.assign({ 'X-Mitosis-Token': TOKEN }, opts.headers || {});
  const r = await fetch(path, opts);
  let body = null;
  try { body = await r.json(); } catch (e) { body = { error: 'the server sent no JSON (' + r.status + ')' }; }
  if (!r.ok) throw new Error(body && body.error ? body.error : 'HTTP ' + r.status);
  return body;
}

function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const k in (attrs || {})) e.setAttribute(k, attrs[k]);
  return e;
}

const fmtMs = (ms) => ms >= 1000 ? (ms / 1000).toPrecision(3) + ' s' : ms >= 10 ? ms.toFixed(0) + ' ms' : ms.toPrecision(2) + ' ms';
const fmtCount = (n) => n >= 1e9 ? (n / 1e9).toFixed(2) + ' G' : n >= 1e6 ? (n / 1e6).toFixed(2) + ' M' : n >= 1e3 ? (n / 1e3).toFixed(1) + ' k' : String(n);
const fmtBytes = (b) => b >= 1e9 ? (b / 1e9).toFixed(2) + ' GB' : (b / 1e6).toFixed(1) + ' MB';
const intOf = (id) => { const v = $(id).value.trim(); return v === '' ? null : Number(v); };

/* ---- step 1: traces ----------------------------------------------------------------------- */

function fillTraces(selectId) {
  const s = $('trace');
  s.textContent = '';
  const groups = {};
  for (const t of state.traces) {
    if (!groups[t.source]) { groups[t.source] = el('optgroup', null, { label: t.source }); s.appendChild(groups[t.source]); }
    groups[t.source].appendChild(el('option', t.name, { value: t.id }));
  }
  if (selectId) s.value = selectId;
}

/* What the trace was recorded on: inspect's "recorded_on" ({kind, name, source} or a line) when
 * the server has it, else its GPU name. */
function recordedOn(m) {
  const r = m && m.recorded_on;
  if (typeof r === 'string') return r;
  if (r && typeof r === 'object') {
    const kind = r.kind === 'cpu' ? 'CPU' : r.kind === 'gpu' ? 'GPU' : 'unknown device';
    return kind + (r.name ? ' ' + r.name : r.kind === 'gpu' ? ' (model unknown)' : '') +
      (r.kind === 'cpu' ? ' — its times are CPU times, not GPU times' : '');
  }
  return m && m.device ? m.device : 'unknown device';
}

function showSummary(entry) {
  const box = $('trace-summary');
  box.textContent = '';
  const m = entry.summary, dl = el('dl');
  const t = m.time_ms || {};
  const rows = [
    ['Format', m.format], ['Recorded on', recordedOn(m)],
    ['Batch (samples per step)', m.batch_size || 'unknown'],
    ['Model size', m.param_count ? fmtCount(m.param_count) + ' parameters (' + fmtBytes(m.param_bytes) + ')' : 'unknown'],
    ['Step time, one GPU', t.step_wall ? fmtMs(t.step_wall) + (m.measured_step_ms ? ' traced, ' + fmtMs(m.measured_step_ms) + ' measured without the profiler' : '') : '?'],
    ['Forward / backward / optimizer', [t.forward, t.backward, t.optimizer].map((x) => fmtMs(x || 0)).join(' / ')],
    ['Operators, layers', m.ops + ' operators in ' + m.layers + ' layers'],
  ];
  for (const [k, v] of rows) { dl.appendChild(el('dt', k)); dl.appendChild(el('dd', v)); }
  box.appendChild(dl);
}

/* Only the answer for the trace chosen last is shown: an earlier choice's answer (a larger trace
 * reads longer) may come after it and must not replace it. */
async function chooseTrace() {
  const id = $('trace').value;
  state.summary = null;
  $('trace-summary').textContent = 'Reading the trace…';
  try {
    const entry = await api('/api/trace?id=' + encodeURIComponent(id));
    if ($('trace').value !== id) return;
    state.summary = entry.summary;
    showSummary(entry);
    if (!movable()) $('gpu-type').value = '';
  } catch (e) {
    if ($('trace').value !== id) return;
    $('trace-summary').textContent = '';
    $('trace-summary').appendChild(el('p', e.message, { class: 'error' }));
  }
  validate();
}

async function upload() {
  $('upload-error').textContent = '';
  const files = $('upload-files').files;
  if (!files.length) { $('upload-error').textContent = 'Choose the trace\'s files first.'; return; }
  const fd = new FormData();
  fd.append('name', $('upload-name').value || files[0].name);
  for (const f of files) fd.append('file', f, f.name);
  $('upload-btn').disabled = true;
  try {
    const entry = await api('/api/traces', { method: 'POST', body: fd });
    state.traces.push(entry);
    fillTraces(entry.id);
    state.summary = entry.summary;
    showSummary(entry);
    validate();
  } catch (e) {
    $('upload-error').textContent = 'Upload refused: ' + e.message;
  } finally {
    $('upload-btn').disabled = false;
  }
}

/* ---- step 2: the cluster ---------------------------------------------------------------------- */

/* The DGX presets filled from the server's table: "8 H100 GPUs per node on an NVSwitch, one 400 Gb/s
 * network card per GPU." */
function presetsFromServer() {
  for (const x of state.values.presets || []) {
    const p = PRESETS[x.name];
    if (!p || p.topo !== x.name || !x.gpu || !x.gpus) continue;
    p.gpu = x.gpu;
    p.perNode = x.gpus;
    p.help = x.gpus + ' ' + x.gpu.split('-')[0] + ' GPUs per node on an NVSwitch, one ' +
      Math.round(x.nic_bw_Bps * 8 / 1e9) + ' Gb/s network card per GPU.';
  }
  const ph = state.values.photonic, w = PRESETS.wafer;
  if (!ph) return;
  w.perNode = ph.endpoints;
  w.ports = ph.ports;
  w.intra = ph.total_bw_Bps / 1e9;
  w.setup = (ph.setup_ns / 1e6) + 'ms';
  w.help = ph.endpoints + ' A100-class GPUs on one wafer joined by optical circuits: ' + ph.ports + ' ports per GPU, ' +
    w.intra + ' GB/s in all, ' + (ph.setup_ns / 1e6) + ' ms to set up a circuit.';
}

function presetTiers(name) {
  const p = (state.values.presets || []).find((x) => x.name === name);
  return p ? { intra: p.link_bw_Bps / 1e9, inter: p.nic_bw_Bps / 1e9 } : { intra: 450, inter: 50 };
}

/* A trace recorded on a CPU (inspect's recorded_on, when the server has it): it names no GPU to
 * move times from, so "Trace recorded on" is not offered; a GPU type predicts through the server's
 * model for CPU traces. */
const cpuTrace = () => !!(state.summary && state.summary.recorded_on && state.summary.recorded_on.kind === 'cpu');

/* The trace's times can be moved to another GPU type: it names its GPU, the user did, or it is a
 * CPU trace. */
const movable = () => !!(state.summary && (traceDevice() || $('trace-gpu').value || cpuTrace()));

/* The GPU the trace names (inspect's device, or its recorded_on when that is a named GPU), or null. */
const traceDevice = () => {
  const m = state.summary, r = m && m.recorded_on;
  return (m && m.device) || (r && r.kind === 'gpu' && r.name) || null;
};

function applyPreset() {
  const name = $('preset').value, p = PRESETS[name];
  $('preset-help').textContent = p.help;
  if (p.custom) { validate(); return; }
  const tiers = p.topo ? presetTiers(p.topo) : { intra: p.intra, inter: 0 };
  $('gpus-per-node').value = p.perNode;
  $('nodes').value = p.nodes;
  $('intra-bw').value = tiers.intra;
  $('inter-bw').value = tiers.inter;
  if (movable()) $('gpu-type').value = p.gpu;
  validate();
}

function fillGpus() {
  for (const id of ['gpu-type', 'trace-gpu']) {
    const s = $(id);
    s.appendChild(el('option', id === 'gpu-type' ? 'as traced' : 'unknown', { value: '' }));
    for (const g of state.values.gpus) s.appendChild(el('option', g.name + ' — ' + g.note, { value: g.name }));
  }
}

/* The run options the form describes: the same names as the CLI's flags. */
function clusterOptions(o) {
  const p = PRESETS[$('preset').value];
  const per = intOf('gpus-per-node'), nodes = intOf('nodes'), total = per * nodes;
  o.gpus = total;
  if (p.photonic) {
    o.network = 'photonic';
    o.ports = p.ports;
    o['port-bw'] = (Number($('intra-bw').value) / p.ports) + 'GB/s';
    o['setup-lat'] = p.setup;
  } else {
    const tiers = p.topo ? presetTiers(p.topo) : null;
    const unchanged = tiers && nodes === 1 && per === 8 && Number($('intra-bw').value) === tiers.intra &&
                      Number($('inter-bw').value) === tiers.inter;
    if (unchanged) {
      o.topology = p.topo;
    } else if (nodes === 1) {
      o.topology = 'switch:' + per;
      o['link-bw'] = $('intra-bw').value + 'GB/s';
    } else {
      o.topology = 'multinode:nodes=' + nodes + ',gpus=' + per;
      o['link-bw'] = $('intra-bw').value + 'GB/s';
      o['nic-bw'] = $('inter-bw').value + 'GB/s';
    }
    o['gpus-per-node'] = per;
  }
  if ($('gpu-type').value) o['target-gpu'] = $('gpu-type').value;
  if ($('trace-gpu').value) o['trace-gpu'] = $('trace-gpu').value;
}

function planOptions(o, command) {
  if (command === 'simulate') {
    o.strategy = $('strategy').value;
    if (o.strategy === 'distopt') { /* Megatron's distributed optimizer: DDP-style buckets, --dist-opt */
      o.strategy = 'ddp';
      o['dist-opt'] = true;
    }
    for (const k of ['tp', 'pp', 'micro-batches']) if (intOf(k) !== null) o[k] = intOf(k);
  }
  const b = batchRule();
  if (b.global !== null) o.batch = b.global;
  if (intOf('seq') !== null) o.seq = intOf('seq');
  if ($('slow-gpu-on').checked) o['slow-gpu'] = [intOf('slow-gpu-rank') + ':' + $('slow-gpu-factor').value];
  if ($('slow-link-on').checked) o['slow-link'] = ['gpu' + intOf('slow-link-rank') + ':' + $('slow-link-factor').value];
  modelOptions(o);
  const extra = $('extra').value.trim();
  if (extra) Object.assign(o, JSON.parse(extra));
}

/* The mode: 'simulate' (this plan), 'compare' (which plan is fastest?) or 'cluster' (several jobs). */
const mode = () => $('mode-plan').checked ? 'simulate' : $('mode-cluster').checked ? 'cluster' : 'compare';

const totalGpus = () => (intOf('gpus-per-node') || 0) * (intOf('nodes') || 0);

/* The one batch rule of both modes (simulate one plan, "Which plan is fastest?"): the global
 * batch is the one typed, or else the traced batch × the GPUs, sent to the server explicitly, so
 * every plan trains on the same samples per step. A trace with no known batch takes no batch:
 * each replica then runs the traced step. {global (null: none), traced, gpus, typed}. */
function batchRule() {
  const traced = state.summary && state.summary.batch_size > 0 ? state.summary.batch_size : null;
  const typed = intOf('batch'), gpus = totalGpus();
  if (typed !== null) return { global: typed, traced, gpus, typed: true };
  return { global: traced && gpus > 0 ? traced * gpus : null, traced, gpus, typed: false };
}

/* "global batch 64 = traced 8 × 8 GPUs" (the rule's words; replicas: the data-parallel size,
 * when one plan is known). */
function batchWords(b, replicas) {
  if (b.global === null) return 'the trace does not say its batch: each replica runs the traced step';
  let t = 'global batch ' + b.global + (b.typed ? ' (as typed)' : ' = traced ' + b.traced + ' × ' + b.gpus + ' GPUs');
  if (replicas && b.global % replicas === 0) t += ', ' + b.global / replicas + ' samples per replica × ' + replicas + ' replica' + (replicas === 1 ? '' : 's');
  return t;
}

function request() {
  const command = mode();
  if (command === 'cluster') return clusterRequest();
  const o = {};
  clusterOptions(o);
  planOptions(o, command);
  const req = { command, trace: $('trace').value, options: o };
  const files = [];
  if ($('want-timeline').checked) files.push('timeline');
  if ($('want-csv').checked && command === 'simulate') files.push('csv');
  if (files.length) req.files = files; /* written only when asked for (docs/serve.md) */
  return req;
}

/* ---- several jobs on one fabric (mitosis cluster) ------------------------------------------- */

let clusterJobs = 0;

/* One job row: name, trace (the catalogue), GPUs, placement (empty: the fabric's), start ms. */
function addClusterJob(traceId, gpus) {
  const k = clusterJobs++, tr = el('tr', null, { 'data-job': k });
  const cell = (node) => { const td = el('td'); td.appendChild(node); tr.appendChild(td); return node; };
  cell(el('input', null, { type: 'text', class: 'cj-name', value: 'job' + String.fromCharCode(97 + (k % 26)), maxlength: '60' }));
  const sel = cell(el('select', null, { class: 'cj-trace' }));
  for (const t of state.traces) sel.appendChild(el('option', t.name, { value: t.id }));
  sel.value = traceId || $('trace').value;
  cell(el('input', null, { type: 'number', class: 'cj-gpus', min: '1', step: '1', value: String(gpus || 4) }));
  const pl = cell(el('select', null, { class: 'cj-placement' }));
  pl.appendChild(el('option', 'the fabric\'s', { value: '' }));
  for (const x of state.values.placements || []) pl.appendChild(el('option', x.name, { value: x.name }));
  cell(el('input', null, { type: 'number', class: 'cj-start', min: '0', step: 'any', value: '0' }));
  const rm = cell(el('button', 'remove', { type: 'button' }));
  rm.addEventListener('click', () => { tr.remove(); validate(); });
  for (const e of tr.querySelectorAll('input, select')) e.addEventListener('input', () => validate());
  $('cluster-jobs').appendChild(tr);
  validate();
}

const clusterRows = () => [...document.querySelectorAll('#cluster-jobs tr[data-job]')];

/* The cluster run the form describes (serve/clusterreq.h): the model's fields apply to every job. */
function clusterRequest() {
  const cl = { topology: $('cl-topology').value.trim(), placement: $('cl-placement').value, jobs: [] };
  if ($('cl-link-bw').value.trim() !== '') cl.network = { 'link-bw': $('cl-link-bw').value.trim() + 'GB/s' };
  for (const tr of clusterRows()) {
    const o = { gpus: Number(tr.querySelector('.cj-gpus').value) };
    modelOptions(o);
    const j = { name: tr.querySelector('.cj-name').value.trim(), trace: tr.querySelector('.cj-trace').value, options: o };
    const pl = tr.querySelector('.cj-placement').value, start = Number(tr.querySelector('.cj-start').value || 0);
    if (pl) j.placement = pl;
    if (start > 0) j.start_ms = start;
    cl.jobs.push(j);
  }
  const req = { command: 'cluster', cluster: cl };
  if ($('want-timeline').checked) req.files = ['timeline'];
  return req;
}

function clusterProblems(p) {
  const rows = clusterRows();
  if (!rows.length) p.cluster = 'Add a job';
  if (!$('cl-topology').value.trim()) p['cl-topology'] = 'Give a topology spec, e.g. fattree:k=4';
  const bw = $('cl-link-bw').value.trim();
  if (bw !== '') checkField(p, 'cl-link-bw', 'link-bw', 'The link bandwidth', 1e9, 'GB/s');
  const names = new Set();
  for (const tr of rows) {
    const name = tr.querySelector('.cj-name').value.trim(), g = Number(tr.querySelector('.cj-gpus').value);
    if (!name) p.cluster = 'Every job needs a name';
    else if (names.has(name)) p.cluster = 'Two jobs are named "' + name + '": names must differ';
    names.add(name);
    const e = rangeProblem('gpus', g, 'Job ' + (name || '?') + ': GPUs');
    if (e) p.cluster = e;
  }
  modelProblems(p);
  extraProblems(p);
}

/* "2 jobs on fattree:k=4 (16 GPUs): worst slowdown 1.01× (job a), mean 1.01×; all done after 1.13 s." */
function clusterSentence(r) {
  return r.jobs.length + ' job' + (r.jobs.length === 1 ? '' : 's') + ' on ' + r.topology + ' (' + r.fabric_gpus + ' GPUs): ' +
    'worst slowdown ' + r.worst_slowdown.toFixed(2) + '× (job ' + r.worst_job + '), mean ' + r.mean_slowdown.toFixed(2) +
    '× (a job\'s step together / alone on the same GPUs); all done after ' + fmtMs(r.makespan_ms) + '; ' +
    r.n_shared_links + ' link' + (r.n_shared_links === 1 ? '' : 's') + ' carried more than one job.';
}

function showClusterTable(r) {
  const t = $('cluster-table');
  t.textContent = '';
  const head = el('tr');
  for (const c of ['job', 'trace', 'GPUs', 'placed on', 'alone', 'together', 'slowdown', 'bytes on shared links']) head.appendChild(el('th', c));
  t.appendChild(head);
  for (const j of r.jobs) {
    const tr = el('tr');
    for (const c of [j.name, j.trace, j.gpus, j.placement + ': ' + j.placed_on, fmtMs(j.alone_ms), fmtMs(j.together_ms),
                     j.slowdown.toFixed(3) + '×', fmtBytes(j.shared_bytes)])
      tr.appendChild(el('td', c));
    t.appendChild(tr);
  }
  t.hidden = false;
}

/* ---- the model's options: form fields generated from the CLI's flag table ------------------- */

/* The run options offered as fields (GET /api/options gives each one's kind, help, range and
 * choices; an option this server does not take is left out). */
const FIELD_FLAGS = ['blocks', 'seq', 'precision', 'recompute', 'fsdp', 'zero', 'fsdp-units', 'fsdp-prefetch',
                     'fsdp-reshard', 'fsdp-shard', 'pp-cut', 'pp-layers', 'schedule', 'vpp', 'cp', 'sp'];
const fieldFlags = () => FIELD_FLAGS.map(flagOf).filter((f) => f);

function fillOptionFields() {
  const box = $('opt-fields');
  box.textContent = '';
  for (const f of fieldFlags()) {
    const id = 'opt-' + f.name, row = el('div', null, { class: 'row' });
    let input;
    if (f.kind === 'switch') {
      input = el('input', null, { id, type: 'checkbox' });
    } else if (f.kind === 'choice' && f.choices) {
      input = el('select', null, { id });
      input.appendChild(el('option', 'default', { value: '' }));
      for (const c of f.choices.split('|')) input.appendChild(el('option', c, { value: c }));
    } else if (f.kind === 'int') {
      input = el('input', null, { id, type: 'number', step: '1', placeholder: 'default' });
      if (f.lo !== null) input.setAttribute('min', f.lo);
      if (f.hi !== null) input.setAttribute('max', f.hi);
    } else {
      input = el('input', null, { id, type: 'text', placeholder: f.metavar || '' });
    }
    row.appendChild(el('label', '--' + f.name, { for: id }));
    row.appendChild(input);
    row.appendChild(el('small', f.help, { class: 'help' }));
    row.appendChild(el('span', null, { class: 'err', id: 'err-' + id }));
    box.appendChild(row);
  }
}

/* The generated fields' values into o (a switch when ticked, a field when not empty). */
function modelOptions(o) {
  for (const f of fieldFlags()) {
    const e = $('opt-' + f.name);
    if (!e) continue;
    if (f.kind === 'switch') { if (e.checked) o[f.name] = true; continue; }
    const v = e.value.trim();
    if (v !== '') o[f.name] = f.kind === 'int' ? Number(v) : v;
  }
}

function modelProblems(p) {
  for (const f of fieldFlags())
    if (f.kind === 'int' && $('opt-' + f.name)) checkField(p, 'opt-' + f.name, f.name, '--' + f.name);
}

/* ---- validation as you type: impossible combinations keep Run disabled ---------------------- */

/* A run option of the CLI's flag tables as GET /api/options serialises them ({name, kind, lo,
 * lo_open, hi, choices}): the page's limits are the CLI's, not a copy of them. */
function flagOf(name) {
  for (const cmd of ['simulate', 'compare']) {
    const f = (state.options[cmd] || []).find((x) => x.name === name);
    if (f) return f;
  }
  return null;
}

/* The problem with value v (in the field's unit; scale: how many of the flag's units one is, e.g.
 * 1e9 bytes/s per GB/s) against flag `name`'s range, or null. Integers must be whole. */
function rangeProblem(name, v, what, scale, unit) {
  const f = flagOf(name), k = scale || 1;
  if (!Number.isFinite(v)) return what + ' must be a number';
  if (f && (f.kind === 'int') && !Number.isInteger(v)) return what + ' must be a whole number';
  if (!f || f.lo === null) return null;
  const x = v * k, lo = f.lo, hi = f.hi;
  if ((f.lo_open ? x > lo : x >= lo) && (hi === null || x <= hi)) return null;
  const u = unit ? ' ' + unit : '';
  return what + ' must be ' + (f.lo_open ? 'above ' : 'at least ') + lo / k + u +
    (hi !== null ? ' and at most ' + hi / k + u : '') + ' (the limits of --' + name + ')';
}

/* The field's number (null when empty) checked against a flag's range. */
function checkField(p, id, flag, what, scale, unit) {
  const raw = $(id).value.trim();
  if (raw === '') return null;
  const e = rangeProblem(flag, Number(raw), what, scale, unit);
  if (e) p[id] = e;
  return e ? null : Number(raw);
}

function problems() {
  const p = {}, preset = PRESETS[$('preset').value];
  if (mode() === 'cluster') { clusterProblems(p); return p; }
  const per = $('gpus-per-node').value.trim() === '' ? null : checkField(p, 'gpus-per-node', 'gpus-per-node', 'GPUs per node');
  if ($('gpus-per-node').value.trim() === '') p['gpus-per-node'] = 'GPUs per node: give a number';
  const nodes = checkField(p, 'nodes', 'gpus', 'Nodes');
  if ($('nodes').value.trim() === '') p.nodes = 'Nodes: give a number';
  else if (!p.nodes && preset.photonic && nodes !== 1) p.nodes = 'A wafer is one node: set the GPUs on it instead';
  const total = (per || 0) * (nodes || 0);
  if (!p['gpus-per-node'] && !p.nodes) {
    const e = rangeProblem('gpus', total, 'GPUs per node × nodes (' + total + ')');
    if (e) p.nodes = e;
  }
  for (const [id, flag, what] of [['intra-bw', 'link-bw', 'The intra-node bandwidth'], ['inter-bw', 'nic-bw', 'The inter-node bandwidth']]) {
    if (id === 'inter-bw' && (nodes || 0) < 2) continue;
    const raw = $(id).value.trim();
    if (raw === '') { p[id] = what + ': give a number of GB/s'; continue; }
    checkField(p, id, flag, what, 1e9, 'GB/s');
  }
  const device = traceDevice();
  if ($('gpu-type').value && !state.summary) p['gpu-type'] = 'Choose a trace first';
  else if ($('gpu-type').value && !device && !$('trace-gpu').value && !cpuTrace())
    p['gpu-type'] = 'This trace does not say which GPU it ran on: set "Trace recorded on", or keep "as traced"';
  planProblems(p, total);
  modelProblems(p);
  extraProblems(p);
  if (!$('trace').value) p.trace = 'Choose a trace';
  return p;
}

function planProblems(p, total) {
  const simulate = $('mode-plan').checked;
  const layers = state.summary ? state.summary.layers : null;
  let tp = 1, pp = 1;
  if (simulate) {
    tp = checkField(p, 'tp', 'tp', 'Tensor parallel') || 1;
    pp = checkField(p, 'pp', 'pp', 'Pipeline stages') || 1;
    checkField(p, 'micro-batches', 'micro-batches', 'Micro-batches');
    if (!p.tp && !p.pp && total > 0 && total % (tp * pp) !== 0)
      p.tp = 'Tensor × pipeline (' + tp * pp + ') must divide the ' + total + ' GPUs';
    if (!p.pp && layers && pp > layers) p.pp = 'At most ' + layers + ' stages: the trace has ' + layers + ' layers';
    const mb = intOf('micro-batches');
    if (!p['micro-batches'] && mb !== null && pp === 1 && mb > 1) p['micro-batches'] = 'Micro-batches need pipeline stages (2 or more)';
  }
  checkField(p, 'batch', 'batch', 'The global batch');
  checkField(p, 'seq', 'seq', 'The sequence length');
  const b = batchRule();
  if (!p.batch && b.typed && !b.traced && state.summary)
    p.batch = 'This trace does not say its batch, so it cannot be rescaled: leave the global batch empty';
  if (!p.batch && b.typed && b.traced && simulate && !p.tp && !p.pp && total > 0 && total % (tp * pp) === 0) {
    const dp = total / (tp * pp), mb = intOf('micro-batches') || pp;
    if (b.global % dp !== 0) p.batch = 'The global batch ' + b.global + ' does not divide over ' + dp + ' data-parallel replicas: use a multiple of ' + dp;
    else if (!p['micro-batches'] && (b.global / dp) % mb !== 0)
      p.batch = 'Each replica\'s ' + b.global / dp + ' samples do not split into ' + mb + ' equal micro-batches';
  }
  const gpuCheck = (on, rank, key) => {
    if (!$(on).checked) return;
    const r = intOf(rank);
    if (r === null || !Number.isInteger(r) || r < 0 || r >= total) p[key] = 'The GPU number must be in 0..' + (total - 1);
  };
  gpuCheck('slow-gpu-on', 'slow-gpu-rank', 'slow-gpu');
  gpuCheck('slow-link-on', 'slow-link-rank', 'slow-link');
  const factorCheck = (on, id, key) => {
    if (p[key] || !$(on).checked) return;
    const f = Number($(id).value);
    if (!(f >= 1 && f <= 1e6)) p[key] = 'The factor must be a number in 1..1000000';
  };
  factorCheck('slow-gpu-on', 'slow-gpu-factor', 'slow-gpu');
  factorCheck('slow-link-on', 'slow-link-factor', 'slow-link');
  if ($('slow-link-on').checked && PRESETS[$('preset').value].photonic) p['slow-link'] = 'The photonic wafer has no fixed links to slow down';
}

/* The experts' box: a JSON object of run options, each one the command takes, with a value of the
 * option's kind and in its range (the server checks again: /api/check, as you type). */
function extraProblems(p) {
  const text = $('extra').value.trim();
  if (!text) return;
  let x;
  try { x = JSON.parse(text); } catch (e) { p.extra = 'Not JSON: ' + e.message; return; }
  if (typeof x !== 'object' || Array.isArray(x) || x === null) { p.extra = 'Give a JSON object: {"option": value, ...}'; return; }
  const command = $('mode-plan').checked ? 'simulate' : 'compare';
  for (const [k, v] of Object.entries(x)) {
    const f = (state.options[command] || []).find((o) => o.name === k);
    if (!f) { p.extra = 'Unknown option "' + k + '" for ' + command + ' (the list is below the box)'; return; }
    if (f.kind === 'switch') {
      if (typeof v !== 'boolean') { p.extra = '"' + k + '" is a switch: true or false'; return; }
    } else if (Array.isArray(v) ? !f.repeat : typeof v !== 'string' && typeof v !== 'number') {
      p.extra = '"' + k + '" takes ' + (f.repeat ? 'a value or a list of values' : 'one value (a string or a number)'); return;
    } else if ((f.kind === 'int' || f.kind === 'number') && !Array.isArray(v)) {
      const e = rangeProblem(k, Number(v), '"' + k + '"');
      if (e) { p.extra = e; return; }
    } else if (f.choices && f.kind === 'choice' && typeof v === 'string' && !f.choices.split('|').includes(v)) {
      p.extra = '"' + k + '" is one of ' + f.choices.split('|').join(', '); return;
    }
  }
}

/* The server's own check of the whole request (POST /api/check: the CLI's flag parser, the same
 * as a run's), asked once the page finds nothing, at most every 250 ms; its message goes under
 * the field the option belongs to. */
const FIELD_OF = { 'gpus': 'nodes', 'gpus-per-node': 'gpus-per-node', 'link-bw': 'intra-bw', 'nic-bw': 'inter-bw',
                   'port-bw': 'intra-bw', 'batch': 'batch', 'seq': 'seq', 'tp': 'tp', 'pp': 'pp', 'micro-batches': 'micro-batches',
                   'slow-gpu': 'slow-gpu', 'slow-link': 'slow-link', 'target-gpu': 'gpu-type', 'trace-gpu': 'gpu-type',
                   'topology': 'gpus-per-node' };
let checkTimer = null, checkSeq = 0;
function serverCheck() {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(async () => {
    const seq = ++checkSeq;
    let req;
    try { req = request(); } catch (e) { return; }
    const key = JSON.stringify(req);
    let problem = null;
    try { await api('/api/check', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: key }); }
    catch (e) { problem = e.message; }
    if (seq !== checkSeq) return;
    state.serverProblem = problem ? { key, text: problem } : null;
    validate(true);
  }, 250);
}

function fieldOfMessage(text) {
  const m = /(?:option '|--)([a-z0-9-]+)/.exec(text);
  const opt = m ? m[1] : null;
  const extra = $('extra').value.trim();
  if (opt && extra && new RegExp('"' + opt + '"').test(extra)) return 'extra';
  if (opt && $('opt-' + opt)) return 'opt-' + opt;
  if (mode() === 'cluster') return opt === 'link-bw' ? 'cl-link-bw' : 'cluster';
  return (opt && FIELD_OF[opt]) || 'server';
}

function validate(fromServer) {
  if (!state.options) return false;
  const preset = PRESETS[$('preset').value], nodes = intOf('nodes') || 0;
  $('total-gpus').textContent = totalGpus();
  $('nodes').disabled = !!preset.photonic;
  $('inter-bw').disabled = !!preset.photonic || nodes < 2;
  const cl = mode() === 'cluster';
  $('plan-fields').hidden = mode() !== 'simulate';
  $('cluster-fields').hidden = !cl;
  $('step-cluster').hidden = $('row-batch').hidden = $('whatif').hidden = cl;
  $('want-csv').parentNode.hidden = cl;
  const device = traceDevice();
  $('row-trace-gpu').hidden = !!device || !state.summary || cpuTrace();
  if (cpuTrace()) $('trace-gpu').value = '';
  $('gpu-type-help').textContent = cpuTrace() ?
    'The trace was recorded on a CPU: its operator times are moved to this GPU by the analytical model (--target-gpu, ' +
    'the GPU catalogue). "As traced" keeps CPU processes, unless the preset names a GPU.' :
    'The GPU to predict for (the GPU catalogue, --target-gpu). "As traced" keeps the recorded operator times.';
  const tp = intOf('tp') || 1, pp = intOf('pp') || 1, total = totalGpus();
  const dp = total && total % (tp * pp) === 0 ? total / (tp * pp) : null;
  $('dp-size').textContent = dp || '—';
  const p = problems();
  if (!Object.keys(p).length) {
    let key = null;
    try { key = JSON.stringify(request()); } catch (e) { /* the experts' box: reported above */ }
    const sp = state.serverProblem;
    if (sp && sp.key === key) p[fieldOfMessage(sp.text)] = sp.text;
    else if (!fromServer) serverCheck();
  }
  const b = batchRule();
  $('batch-rule').textContent = p.batch || cl ? '' : 'This run: ' + batchWords(b, $('mode-plan').checked ? dp : null) +
    ($('mode-plan').checked ? '' : ' (every plan trains on this batch; plans it does not divide over are skipped)') + '.';
  for (const e of document.querySelectorAll('.err')) e.textContent = '';
  for (const e of document.querySelectorAll('.bad')) e.classList.remove('bad');
  for (const k in p) {
    const box = $('err-' + k);
    if (box) box.textContent = p[k];
    if ($(k)) $(k).classList.add('bad');
  }
  const first = Object.values(p)[0];
  $('run').disabled = !!first || state.polling !== null;
  $('run-why').textContent = first || '';
  return !first;
}

/* ---- running, progress and the answer ---------------------------------------------------------- */

/* The answer's section shown, emptied. */
function clearAnswer() {
  $('step-answer').hidden = false;
  for (const id of ['answer', 'run-error', 'answer-detail', 'downloads']) $(id).textContent = '';
  for (const id of ['ranking', 'cluster-table', 'skipped', 'warnings', 'waits-box']) $(id).hidden = true;
}

async function run() {
  if (!validate()) return;
  const req = request();
  $('run').disabled = true;
  clearAnswer();
  $('report').removeAttribute('src');
  try {
    const { id } = await api('/api/runs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(req) });
    const h = { id, req, traceName: $('trace').selectedOptions[0].textContent, summary: state.summary, status: 'queued' };
    state.history.push(h);
    renderHistory();
    poll(h);
  } catch (e) {
    $('run-error').textContent = e.message;
    validate();
  }
}

/* Cancel: DELETE /api/runs/N stops a queued or running run within a second. */
async function cancelRun() {
  if (!state.running) return;
  $('cancel').disabled = true;
  try { await api('/api/runs/' + state.running.id, { method: 'DELETE' }); } catch (e) { $('run-error').textContent = e.message; }
}

function poll(h) {
  $('progress').hidden = false;
  state.running = h;
  $('cancel').hidden = false;
  $('cancel').disabled = false;
  state.polling = setInterval(async () => {
    let s;
    try { s = await api('/api/runs/' + h.id); } catch (e) { return; }
    const pr = s.progress;
    const frac = s.status === 'done' ? 1 : pr.total ? pr.done / pr.total : 0;
    $('progress-bar').style.width = (100 * frac).toFixed(0) + '%';
    $('progress-text').textContent = s.status === 'queued' ?
      'waiting: ' + (s.queue_position > 1 ? (s.queue_position - 1) + ' run(s) queued before it' : 'next in the queue') + '…' :
      pr.total && s.command === 'simulate' ? 'simulating: ' + (100 * pr.done / pr.total).toFixed(0) + '% of the steps (' + s.elapsed_s.toFixed(1) + ' s)' :
      pr.total ? 'plan ' + Math.min(pr.done + 1, pr.total) + ' of ' + pr.total + (pr.label ? ': ' + pr.label : '') +
                 ' (' + s.elapsed_s.toFixed(1) + ' s)' : s.status + ' (' + s.elapsed_s.toFixed(1) + ' s)';
    if (s.status !== 'done' && s.status !== 'failed' && s.status !== 'cancelled') return;
    clearInterval(state.polling);
    state.polling = null;
    state.running = null;
    $('cancel').hidden = true;
    $('progress').hidden = true;
    h.status = s.status;
    h.result = s.result;
    h.error = s.error;
    h.files = s.files;
    h.filesNote = s.files_note;
    showRun(h);
    renderHistory();
    validate();
  }, 300);
}

/* A holdback in a table cell: "host 38%", "network 12%", "memory (does not fit)", "compute". */
const holdbackCell = (hb) => !hb ? '?' : hb.kind === 'memory' ? 'memory (does not fit)' : hb.kind === 'compute' ? 'compute' :
  hb.kind + ' ' + (100 * hb.share).toFixed(0) + '%';

/* What a what-if cost: "630 ms → 1.26 s per step (+99.9%)" from the run's whatif {base_ms,
 * run_ms, change_pct} (simulate) or a row's unperturbed_step_ms and change_pct (compare): the
 * change is the server's (the CLI's what-if line), never re-derived here; '' without one. */
function whatifWords(base, run, pct) {
  if (!(base > 0) || !(run > 0) || typeof pct !== 'number') return '';
  return fmtMs(base) + ' → ' + fmtMs(run) + ' per step (' + (pct >= 0 ? '+' : '') + pct.toFixed(1) + '%)';
}

/* "8.00× one GPU (100% efficiency)": the server's speed-up over one GPU at the traced batch (the
 * same rule as compare's rows: report/verdict.h), never re-derived here; '' without one. */
function speedWords(speedup, efficiency, gpus) {
  if (!(speedup > 0)) return '';
  let t = speedup.toFixed(2) + '× one GPU (' + (100 * efficiency).toFixed(0) + '% efficiency)';
  if (gpus > 0 && speedup > 1.01 * gpus)
    t += ' — more than the ' + gpus + ' GPUs: one GPU at the traced batch runs its samples slower than each GPU runs its share here';
  return t;
}

/* The server's holdback (report/verdict.h: what holds the step back most, from the breakdown). */
const holdbackWords = (hb) => hb ? hb.text : '';

/* Whom the GPUs waited for: the server's waits lines (report/waits.h, the text summary's), as sent. */
function showWaits(r) {
  const w = r.waits, ul = $('waits');
  ul.textContent = '';
  const lines = w && w.lines ? w.lines : [];
  for (const x of lines) ul.appendChild(el('li', x.text));
  if (lines.length && w.more_gpus > 0)
    ul.appendChild(el('li', w.more_gpus + ' more GPU' + (w.more_gpus === 1 ? ' waits' : 's wait') + ' (result.json: waited_for per GPU)'));
  $('waits-share').textContent = lines.length ? (100 * w.min_share).toFixed(0) + '%' : '';
  $('waits-box').hidden = !lines.length;
}

/* The answer in plain words: "8 GPUs: 41 ms per step, 7.99× one GPU (100% efficiency); what-if:
 * 630 ms → 1.26 s per step (+99.9%). What holds the step back most: ..." */
function sentence(h) {
  const r = h.result;
  if (h.req.command === 'cluster') return clusterSentence(r);
  if (h.req.command === 'compare') {
    const best = r.rows && r.rows[0];
    const skipped = (r.skipped || []).length;
    if (!best) return 'No plan could run on ' + r.gpus + ' GPUs (' + skipped + ' skipped: see below).';
    const wi = whatifWords(best.unperturbed_step_ms, best.step_ms, best.change_pct);
    const sp = speedWords(best.speedup, best.efficiency, best.plan && best.plan.gpus);
    const pruned = (r.pruned || []).length;
    const more = [skipped ? skipped + ' more skipped' : '', pruned ? pruned + ' pruned: they cannot beat it' : ''].filter((x) => x).join(', ');
    return 'Fastest of ' + (r.rows.length + pruned) + ' plans on ' + r.gpus + ' GPUs' + (more ? ' (' + more + ')' : '') +
      ': ' + best.label + ' — ' + fmtMs(best.step_ms) + ' per step' + (sp ? ', ' + sp : '') +
      (wi ? '; what-if: ' + wi : '') + '. ' + (best.holdback ? holdbackWords(best.holdback) + ' (its busiest GPU).' : '');
  }
  const g = r.plan.gpus;
  /* a CPU-recorded trace predicted on GPUs: the op times are the analytical model's (one GPU too) */
  const modelled = r.recorded_on && r.recorded_on.kind === 'cpu' && r.ranks === 'gpus';
  const sp = speedWords(r.speedup, r.efficiency, g);
  const wi = r.whatif ? whatifWords(r.whatif.base_ms, r.whatif.run_ms, r.whatif.change_pct) : '';
  const hb = holdbackWords(r.holdback);
  return g + ' GPUs: ' + fmtMs(r.step_ms) + ' per step' + (sp ? ', ' + sp : '') +
    (modelled ? ' (GPU op times from the analytical model: the trace was recorded on a CPU)' : '') +
    (wi ? '; what-if: ' + wi : '') + '.' + (hb ? ' ' + hb + '.' : '');
}

/* The run's warnings (the trace's, the performance model's, memory; the program's "warning"), each
 * once, as the server wrote them. */
function warningsOf(r) {
  const all = (r.warnings || []).slice();
  if (r.warning && !all.includes(r.warning)) all.unshift(r.warning);
  return all.filter((w) => w);
}

function showWarnings(r) {
  const box = $('warnings');
  box.textContent = '';
  const ws = warningsOf(r);
  for (const w of ws) box.appendChild(el('li', w));
  box.hidden = !ws.length;
}

/* The line under the sentence: the batch the run trained on, and what the trace was recorded on. */
function detailWords(h) {
  const r = h.result, parts = [];
  const plan = h.req.command === 'compare' ? r.rows && r.rows[0] && r.rows[0].plan : r.plan;
  const traced = h.summary && h.summary.batch_size > 0 ? h.summary.batch_size : null;
  if (plan && plan.global_batch > 0) {
    const typed = h.req.options.batch !== undefined && traced && h.req.options.batch !== traced * plan.gpus;
    parts.push('Global batch ' + plan.global_batch + (traced && !typed ? ' = traced ' + traced + ' × ' + plan.gpus + ' GPUs' : '') +
               (h.req.command === 'compare' ? ' for every plan' : ', ' + plan.replica_batch + ' samples per replica × ' + plan.dp + ' replica' + (plan.dp === 1 ? '' : 's')));
  }
  const blocks = r.blocks || (plan && h.req.options.blocks ? { count: h.req.options.blocks } : null);
  if (blocks && blocks.count > 0)
    parts.push('the model of ' + blocks.count + ' blocks' + (blocks.traced ? ' (the trace has ' + blocks.traced + ': --blocks)' : ' (--blocks)'));
  if (r.precision && r.precision.assumed) parts.push('precision ' + r.precision.assumed);
  if (r.recompute && r.recompute !== 'none') parts.push('recompute ' + r.recompute);
  const one = h.req.command === 'compare' ? r.baseline : r.one_gpu;
  if (one && one.step_ms > 0)
    parts.push('speed-up against one GPU: ' + fmtMs(one.step_ms) + ' per step' + (one.global_batch > 0 ? ' at batch ' + one.global_batch : '') +
               ', the same operator times');
  else if (r.speedup_note) parts.push('no speed-up: ' + r.speedup_note);
  const rec = r.recorded_on || (h.summary && h.summary.recorded_on);
  if (rec) parts.push('trace recorded on ' + recordedOn({ recorded_on: rec }));
  return parts.length ? parts.join('; ') + '.' : '';
}

/* Plans not run (skipped or pruned) grouped by why (numbers aside): [{why, n, example}], most first. */
function reasonGroups(skipped) {
  const groups = new Map();
  for (const x of skipped || []) {
    const key = (x.reason || '').replace(/[0-9]+(\.[0-9]+)?/g, 'N');
    const g = groups.get(key) || { n: 0, example: x };
    g.n++;
    groups.set(key, g);
  }
  return [...groups.values()].sort((a, b) => b.n - a.n);
}

const RANKING_ROWS = 10;

function showRanking(r) {
  const t = $('ranking');
  t.textContent = '';
  const ran = r.rows.length, skipped = (r.skipped || []).length, pruned = (r.pruned || []).length, shown = Math.min(RANKING_ROWS, ran);
  t.appendChild(el('caption', (shown < ran ? 'Top ' + shown + ' of ' + ran : 'All ' + ran) + ' plans that ran, fastest first' +
    (skipped ? '; ' + skipped + ' more skipped (below)' : '') + (pruned ? '; ' + pruned + ' pruned (below)' : '') + '. ' +
    (ran + skipped + pruned) + ' plans tried in all.'));
  const head = el('tr');
  for (const c of ['rank', 'plan', 'step', 'speed-up', 'efficiency', 'samples/s', 'holds back', 'memory per GPU']) head.appendChild(el('th', c));
  t.appendChild(head);
  r.rows.slice(0, RANKING_ROWS).forEach((x, i) => {
    const tr = el('tr');
    for (const c of [i + 1, x.label, fmtMs(x.step_ms), x.speedup.toFixed(2) + '×', x.efficiency > 0 ? (100 * x.efficiency).toFixed(0) + '%' : '?',
                     x.samples_per_s > 0 ? x.samples_per_s.toFixed(1) : '?', holdbackCell(x.holdback), fmtBytes(x.peak_mem_bytes) + (x.over_mem ? ' — over the GPU\'s memory' : '')])
      tr.appendChild(el('td', c));
    t.appendChild(tr);
  });
  t.hidden = false;
  const box = $('skipped');
  box.textContent = '';
  if (!skipped && !pruned) { box.hidden = true; return; }
  if (skipped) {
    box.appendChild(el('p', skipped + ' plan' + (skipped === 1 ? ' was' : 's were') + ' skipped: they cannot run this trace on ' + r.gpus + ' GPUs.'));
    box.appendChild(groupList(r.skipped));
  }
  if (pruned) {
    box.appendChild(el('p', pruned + ' plan' + (pruned === 1 ? ' was' : 's were') + ' pruned, not simulated: a lower bound on ' +
      (pruned === 1 ? 'its' : 'their') + ' step keeps ' + (pruned === 1 ? 'it' : 'them') + ' out of the first ' + r.exact_rows +
      ' plans that fit in memory, which are exact (the exhaustive option simulates every plan).'));
    box.appendChild(groupList(r.pruned));
  }
  box.hidden = false;
}

/* Plans not run, grouped by why (numbers aside): one line per group with a count and an example. */
function groupList(xs) {
  const ul = el('ul');
  for (const g of reasonGroups(xs)) {
    const li = el('li');
    li.appendChild(el('b', g.n + ' × '));
    li.appendChild(document.createTextNode(g.example.reason + (g.n > 1 ? ' (e.g. ' + g.example.label + ')' : ' (' + g.example.label + ')')));
    ul.appendChild(li);
  }
  return ul;
}

const FILE_LABELS = { 'result.json': 'JSON', 'cluster.json': 'job file (mitosis cluster FILE)', 'report.html': 'standalone HTML report', 'timeline.json': 'timeline (Perfetto)' };

function showRun(h) {
  clearAnswer();
  if (h.status === 'failed' || h.status === 'cancelled') {
    $('run-error').textContent = h.status === 'cancelled' ? 'The run was cancelled.' : 'The run failed: ' + h.error;
    $('report').removeAttribute('src');
    return;
  }
  $('answer').textContent = sentence(h);
  $('answer-detail').textContent = h.req.command === 'cluster' ? '' : detailWords(h);
  showWarnings(h.result);
  if (h.req.command === 'simulate') showWaits(h.result);
  if (h.req.command === 'compare') showRanking(h.result);
  if (h.req.command === 'cluster') showClusterTable(h.result);
  $('downloads').appendChild(el('span', 'Downloads: '));
  for (const f of h.files) {
    const label = FILE_LABELS[f] || 'CSV ' + f.replace('csv/', '');
    $('downloads').appendChild(el('a', label, { href: '/api/runs/' + h.id + '/' + f, download: 'mitosis-run' + h.id + '-' + f.replace('/', '-') }));
  }
  if (h.filesNote) $('downloads').appendChild(el('small', ' (' + h.filesNote + ')'));
  $('report').setAttribute('src', '/api/runs/' + h.id + '/report.html');
}

/* ---- history and side by side -------------------------------------------------------------------- */

function describe(h) {
  if (h.req.command === 'cluster')
    return '#' + h.id + ' cluster, ' + h.req.cluster.jobs.length + ' jobs on ' + h.req.cluster.topology + ' — ' + h.status;
  const o = h.req.options;
  const where = o.topology || (o.network === 'photonic' ? 'photonic wafer' : '');
  return '#' + h.id + ' ' + (h.req.command === 'compare' ? 'fastest plan' : 'plan ' + (o.strategy || '')) + ', ' +
    h.traceName + ', ' + o.gpus + ' GPUs, ' + where + (o['slow-gpu'] || o['slow-link'] ? ', what-if' : '') + ' — ' + h.status;
}

function renderHistory() {
  const ul = $('history');
  ul.textContent = '';
  for (const h of state.history) {
    const li = el('li');
    const box = el('input', null, { type: 'checkbox', 'data-id': h.id });
    box.disabled = h.status !== 'done';
    box.checked = !!h.picked;
    box.addEventListener('change', () => { h.picked = box.checked; renderHistory(); });
    const a = el('a', describe(h), { href: '#' });
    a.addEventListener('click', (ev) => { ev.preventDefault(); if (h.status === 'done' || h.status === 'failed' || h.status === 'cancelled') showRun(h); });
    li.appendChild(box);
    li.appendChild(a);
    ul.appendChild(li);
  }
  $('side-by-side-btn').disabled = state.history.filter((h) => h.picked).length !== 2;
}

function keyNumbers(h) {
  const r = h.result;
  if (h.req.command === 'cluster')
    return [['jobs', r.jobs.length], ['fabric', r.topology + ' (' + r.fabric_gpus + ' GPUs)'],
            ['worst slowdown', r.worst_slowdown.toFixed(3) + '× (' + r.worst_job + ')'], ['mean slowdown', r.mean_slowdown.toFixed(3) + '×'],
            ['makespan', fmtMs(r.makespan_ms)]];
  if (h.req.command === 'compare') {
    const b = r.rows[0];
    if (!b) return [['GPUs', r.gpus], ['plans', '0 ran, ' + (r.skipped || []).length + ' skipped']];
    return [['GPUs', r.gpus], ['plans', r.rows.length + ' ran, ' + (r.skipped || []).length + ' skipped'], ['plan', b.label],
            ['step', fmtMs(b.step_ms)], ['speed-up', b.speedup.toFixed(2) + '×'],
            ['samples/s', b.samples_per_s > 0 ? b.samples_per_s.toFixed(1) : '?'], ['global batch', b.plan.global_batch || '?'],
            ['memory per GPU', fmtBytes(b.peak_mem_bytes)]];
  }
  const rows = [['GPUs', r.plan.gpus], ['plan', 'dp ' + r.plan.dp + ' × tp ' + r.plan.tp + ' × pp ' + r.plan.pp],
                ['step', fmtMs(r.step_ms)], ['speed-up', r.speedup > 0 ? r.speedup.toFixed(2) + '×' : '?'], ['samples/s', r.samples_per_s > 0 ? r.samples_per_s.toFixed(1) : '?'],
                ['global batch', r.plan.global_batch || '?'], ['network', r.topology || r.network],
                ['memory per GPU', fmtBytes(r.peak_mem_bytes)]];
  if (r.whatif) rows.push(['what-if', whatifWords(r.whatif.base_ms, r.whatif.run_ms, r.whatif.change_pct)]);
  return rows;
}

function sideBySide() {
  const box = $('side-by-side');
  box.textContent = '';
  for (const h of state.history.filter((x) => x.picked)) {
    const card = el('div', null, { class: 'card' });
    card.appendChild(el('h3', describe(h)));
    card.appendChild(el('p', sentence(h), { class: 'answer' }));
    const t = el('table', null, { class: 'numbers' });
    for (const [k, v] of keyNumbers(h)) { const tr = el('tr'); tr.appendChild(el('td', k)); tr.appendChild(el('td', v)); t.appendChild(tr); }
    card.appendChild(t);
    card.appendChild(el('a', 'report', { href: '/api/runs/' + h.id + '/report.html', target: '_blank' }));
    box.appendChild(card);
  }
}

/* The fabric's choices: the topology presets' specs and the placement policies, from the server. */
function fillCluster() {
  for (const p of state.values.presets || []) $('cl-topologies').appendChild(el('option', null, { value: p.syntax }));
  for (const x of state.values.placements || []) $('cl-placement').appendChild(el('option', x.name, { value: x.name }));
  const help = () => {
    const x = (state.values.placements || []).find((y) => y.name === $('cl-placement').value);
    $('cl-placement-help').textContent = x ? x.help : '';
  };
  $('cl-placement').addEventListener('change', help);
  help();
}

/* ---- start ------------------------------------------------------------------------------------- */

async function start() {
  try {
    const opts = await api('/api/options');
    state.options = opts;
    state.values = opts.values;
    presetsFromServer();
    state.traces = await api('/api/traces');
  } catch (e) {
    $('run-why').textContent = 'Cannot reach the server: ' + e.message;
    return;
  }
  $('option-names').textContent = state.options.compare.map((f) => f.name).join(', ');
  fillGpus();
  fillOptionFields();
  fillCluster();
  fillTraces();
  $('trace').addEventListener('change', chooseTrace);
  $('preset').addEventListener('change', applyPreset);
  $('upload-btn').addEventListener('click', upload);
  $('run').addEventListener('click', run);
  $('cancel').addEventListener('click', cancelRun);
  $('cl-add').addEventListener('click', () => addClusterJob());
  $('mode-cluster').addEventListener('change', () => { if (!clusterRows().length) { addClusterJob(null, 4); addClusterJob(null, 4); } });
  $('side-by-side-btn').addEventListener('click', sideBySide);
  for (const e of document.querySelectorAll('input, select, textarea'))
    if (e.id !== 'trace' && e.id !== 'preset' && !e.id.startsWith('upload')) e.addEventListener('input', () => validate());
  applyPreset();
  if (state.traces.length) await chooseTrace();
}
start();
