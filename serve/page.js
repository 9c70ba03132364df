/* serve/page.js — the web UI's logic (put inline into page.html at build time). Talks only to
 * this server's /api (serve/serve.h). Every text from the server or a trace goes in through
 * textContent, never as HTML. */
'use strict';
const $ = (id) => document.getElementById(id);
const state = { options: null, values: null, traces: [], summary: null, history: [], polling: null };

/* The cluster presets: bandwidths of the DGX boxes come from the server's topology table
 * (netmodels/presets.c); the wafer is examples/wafer_scale.sh's (84 GPUs, 8 optical ports). */
const PRESETS = {
  'dgx-h100': { topo: 'dgx-h100', gpu: 'H100-SXM', perNode: 8, nodes: 1,
                help: '8 H100 GPUs per node on an NVSwitch, one 400 Gb/s network card per GPU.' },
  'dgx-a100': { topo: 'dgx-a100', gpu: 'A100-80GB', perNode: 8, nodes: 1,
                help: '8 A100 GPUs per node on an NVSwitch, one 200 Gb/s network card per GPU.' },
  'wafer': { photonic: true, gpu: 'A100-80GB', perNode: 84, nodes: 1, intra: 484, ports: 8, setup: '20ms',
             help: '84 A100-class GPUs on one wafer joined by optical circuits: 8 ports per GPU, 484 GB/s in all, 20 ms to set up a circuit.' },
  'custom': { custom: true, help: 'Any number of nodes: NVSwitch inside a node, one network card per GPU between nodes.' },
};

async function api(path, opts) {
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

function showSummary(entry) {
  const box = $('trace-summary');
  box.textContent = '';
  const m = entry.summary, dl = el('dl');
  const t = m.time_ms || {};
  const rows = [
    ['Format', m.format], ['Recorded on', m.device || 'unknown device'],
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

function presetTiers(name) {
  const p = (state.values.presets || []).find((x) => x.name === name);
  return p ? { intra: p.link_bw_Bps / 1e9, inter: p.nic_bw_Bps / 1e9 } : { intra: 450, inter: 50 };
}

/* The trace's times can be moved to another GPU type: it names its GPU, or the user did. */
const movable = () => !!(state.summary && (state.summary.device || $('trace-gpu').value));

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
    for (const k of ['tp', 'pp', 'micro-batches']) if (intOf(k) !== null) o[k] = intOf(k);
  }
  if (intOf('batch') !== null) o.batch = intOf('batch');
  if ($('slow-gpu-on').checked) o['slow-gpu'] = [intOf('slow-gpu-rank') + ':' + $('slow-gpu-factor').value];
  if ($('slow-link-on').checked) o['slow-link'] = ['gpu' + intOf('slow-link-rank') + ':' + $('slow-link-factor').value];
  const extra = $('extra').value.trim();
  if (extra) Object.assign(o, JSON.parse(extra));
}

function request() {
  const command = $('mode-plan').checked ? 'simulate' : 'compare';
  const o = {};
  clusterOptions(o);
  planOptions(o, command);
  return { command, trace: $('trace').value, options: o };
}

/* ---- validation as you type: impossible combinations keep Run disabled ---------------------- */

function rangeOf(name) {
  const f = (state.options.simulate || []).find((x) => x.name === name);
  return f ? { lo: f.lo, hi: f.hi } : { lo: 1, hi: 1 << 20 };
}

function checkInt(id, lo, hi, what) {
  const v = intOf(id);
  if (v === null) return null;
  if (!Number.isInteger(v) || v < lo || (hi !== null && v > hi)) return what + ' must be a whole number in ' + lo + '..' + hi;
  return null;
}

function problems() {
  const p = {}, per = intOf('gpus-per-node'), nodes = intOf('nodes'), preset = PRESETS[$('preset').value];
  const gr = rangeOf('gpus');
  if (per === null || !Number.isInteger(per) || per < 1) p['gpus-per-node'] = 'GPUs per node must be a whole number, 1 or more';
  if (nodes === null || !Number.isInteger(nodes) || nodes < 1) p.nodes = 'Nodes must be a whole number, 1 or more';
  else if (preset.photonic && nodes !== 1) p.nodes = 'A wafer is one node: set the GPUs on it instead';
  const total = (per || 0) * (nodes || 0);
  if (!p['gpus-per-node'] && !p.nodes && total > gr.hi) p.nodes = 'At most ' + gr.hi + ' GPUs in all';
  if (!(Number($('intra-bw').value) > 0)) p['intra-bw'] = 'The bandwidth must be above 0';
  if (nodes > 1 && !(Number($('inter-bw').value) > 0)) p['inter-bw'] = 'With 2 nodes or more the network bandwidth must be above 0';
  const device = state.summary && state.summary.device;
  if ($('gpu-type').value && !state.summary) p['gpu-type'] = 'Choose a trace first';
  else if ($('gpu-type').value && !device && !$('trace-gpu').value)
    p['gpu-type'] = 'This trace does not say which GPU it ran on: set "Trace recorded on", or keep "as traced"';
  planProblems(p, total);
  if (!p.extra && $('extra').value.trim()) {
    try { const x = JSON.parse($('extra').value); if (typeof x !== 'object' || Array.isArray(x) || x === null) throw new Error('not an object'); }
    catch (e) { p.extra = 'Not a JSON object: ' + e.message; }
  }
  if (!$('trace').value) p.trace = 'Choose a trace';
  return p;
}

function planProblems(p, total) {
  const simulate = $('mode-plan').checked, tp = intOf('tp') || 1, pp = intOf('pp') || 1;
  const layers = state.summary ? state.summary.layers : null;
  if (simulate) {
    for (const [id, what] of [['tp', 'Tensor parallel'], ['pp', 'Pipeline stages'], ['micro-batches', 'Micro-batches']]) {
      const e = checkInt(id, 1, 1 << 20, what);
      if (e) p[id] = e;
    }
    if (!p.tp && !p.pp && total > 0 && total % (tp * pp) !== 0)
      p.tp = 'Tensor × pipeline (' + tp * pp + ') must divide the ' + total + ' GPUs';
    if (!p.pp && layers && pp > layers) p.pp = 'At most ' + layers + ' stages: the trace has ' + layers + ' layers';
    const mb = intOf('micro-batches');
    if (!p['micro-batches'] && mb !== null && pp === 1 && mb > 1) p['micro-batches'] = 'Micro-batches need pipeline stages (2 or more)';
  }
  const b = checkInt('batch', 1, 1 << 30, 'The global batch');
  if (b) p.batch = b;
  const gpuCheck = (on, rank, key) => {
    if (!$(on).checked) return;
    const r = intOf(rank);
    if (r === null || !Number.isInteger(r) || r < 0 || r >= total) p[key] = 'The GPU number must be in 0..' + (total - 1);
  };
  gpuCheck('slow-gpu-on', 'slow-gpu-rank', 'slow-gpu');
  gpuCheck('slow-link-on', 'slow-link-rank', 'slow-link');
  if (!p['slow-gpu'] && $('slow-gpu-on').checked && !(Number($('slow-gpu-factor').value) >= 1)) p['slow-gpu'] = 'The factor must be 1 or more';
  if (!p['slow-link'] && $('slow-link-on').checked && !(Number($('slow-link-factor').value) >= 1)) p['slow-link'] = 'The factor must be 1 or more';
  if ($('slow-link-on').checked && PRESETS[$('preset').value].photonic) p['slow-link'] = 'The photonic wafer has no fixed links to slow down';
}

function validate() {
  if (!state.options) return false;
  const preset = PRESETS[$('preset').value], per = intOf('gpus-per-node') || 0, nodes = intOf('nodes') || 0;
  $('total-gpus').textContent = per * nodes;
  $('nodes').disabled = !!preset.photonic;
  $('inter-bw').disabled = !!preset.photonic || nodes < 2;
  $('plan-fields').hidden = !$('mode-plan').checked;
  const device = state.summary && state.summary.device;
  $('row-trace-gpu').hidden = !!device || !state.summary;
  const tp = intOf('tp') || 1, pp = intOf('pp') || 1;
  $('dp-size').textContent = per * nodes && (per * nodes) % (tp * pp) === 0 ? (per * nodes) / (tp * pp) : '—';
  const p = problems();
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

async function run() {
  if (!validate()) return;
  const req = request();
  $('run').disabled = true;
  $('step-answer').hidden = false;
  $('answer').textContent = '';
  $('run-error').textContent = '';
  $('ranking').hidden = true;
  $('downloads').textContent = '';
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

function poll(h) {
  $('progress').hidden = false;
  state.polling = setInterval(async () => {
    let s;
    try { s = await api('/api/runs/' + h.id); } catch (e) { return; }
    const pr = s.progress;
    const frac = s.status === 'done' ? 1 : pr.total ? pr.done / pr.total : 0;
    $('progress-bar').style.width = (100 * frac).toFixed(0) + '%';
    $('progress-text').textContent = s.status === 'queued' ? 'waiting for the run before it…' :
      pr.total ? 'plan ' + Math.min(pr.done + 1, pr.total) + ' of ' + pr.total + (pr.label ? ': ' + pr.label : '') +
                 ' (' + s.elapsed_s.toFixed(1) + ' s)' : s.status + ' (' + s.elapsed_s.toFixed(1) + ' s)';
    if (s.status !== 'done' && s.status !== 'failed') return;
    clearInterval(state.polling);
    state.polling = null;
    $('progress').hidden = true;
    h.status = s.status;
    h.result = s.result;
    h.error = s.error;
    h.files = s.files;
    showRun(h);
    renderHistory();
    validate();
  }, 300);
}

/* The answer in plain words: "8 GPUs: 46 ms per step, 6.9× one GPU; 12% of the time is waiting for the network." */
function sentence(h) {
  const r = h.result;
  if (h.req.command === 'compare') {
    const best = r.rows && r.rows[0];
    if (!best) return 'No plan could run on ' + r.gpus + ' GPUs.';
    const wait = 100 * best.exposed_comm_ms / best.step_ms;
    return 'Fastest of ' + (r.rows.length) + ' plans on ' + r.gpus + ' GPUs: ' + best.label + ' — ' +
      fmtMs(best.step_ms) + ' per step, ' + best.speedup.toFixed(1) + '× one GPU; ' + wait.toFixed(0) +
      '% of the time is waiting for the network.';
  }
  const g = r.plan.gpus, batch = h.summary && h.summary.batch_size;
  const speed = batch && r.samples_per_s > 0 ? r.samples_per_s * r.traced_step_ms / 1000 / batch : null;
  const wait = r.gpus.reduce((a, x) => a + x.exposed_comm_ms, 0) / r.gpus.length / r.step_ms * 100;
  return g + ' GPUs: ' + fmtMs(r.step_ms) + ' per step' + (speed ? ', ' + speed.toFixed(1) + '× one GPU' : '') +
    '; ' + wait.toFixed(0) + '% of the time is waiting for the network.';
}

function showRanking(r) {
  const t = $('ranking');
  t.textContent = '';
  const head = el('tr');
  for (const c of ['rank', 'plan', 'step', 'speed-up', 'samples/s', 'waiting for network', 'memory per GPU']) head.appendChild(el('th', c));
  t.appendChild(head);
  r.rows.slice(0, 10).forEach((x, i) => {
    const tr = el('tr');
    for (const c of [i + 1, x.label, fmtMs(x.step_ms), x.speedup.toFixed(2) + '×', x.samples_per_s > 0 ? x.samples_per_s.toFixed(1) : '?',
                     (100 * x.exposed_comm_ms / x.step_ms).toFixed(0) + '%', fmtBytes(x.peak_mem_bytes) + (x.over_mem ? ' !' : '')])
      tr.appendChild(el('td', c));
    t.appendChild(tr);
  });
  t.hidden = false;
}

const FILE_LABELS = { 'result.json': 'JSON', 'report.html': 'standalone HTML report', 'timeline.json': 'timeline (Perfetto)' };

function showRun(h) {
  $('step-answer').hidden = false;
  $('answer').textContent = '';
  $('run-error').textContent = '';
  $('ranking').hidden = true;
  $('downloads').textContent = '';
  if (h.status === 'failed') {
    $('run-error').textContent = 'The run failed: ' + h.error;
    $('report').removeAttribute('src');
    return;
  }
  $('answer').textContent = sentence(h);
  if (h.req.command === 'compare') showRanking(h.result);
  $('downloads').appendChild(el('span', 'Downloads: '));
  for (const f of h.files) {
    const label = FILE_LABELS[f] || 'CSV ' + f.replace('csv/', '');
    $('downloads').appendChild(el('a', label, { href: '/api/runs/' + h.id + '/' + f, download: 'mitosis-run' + h.id + '-' + f.replace('/', '-') }));
  }
  $('report').setAttribute('src', '/api/runs/' + h.id + '/report.html');
}

/* ---- history and side by side -------------------------------------------------------------------- */

function describe(h) {
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
    a.addEventListener('click', (ev) => { ev.preventDefault(); if (h.status === 'done' || h.status === 'failed') showRun(h); });
    li.appendChild(box);
    li.appendChild(a);
    ul.appendChild(li);
  }
  $('side-by-side-btn').disabled = state.history.filter((h) => h.picked).length !== 2;
}

function keyNumbers(h) {
  const r = h.result;
  if (h.req.command === 'compare') {
    const b = r.rows[0];
    return [['GPUs', r.gpus], ['plan', b.label], ['step', fmtMs(b.step_ms)], ['speed-up', b.speedup.toFixed(2) + '×'],
            ['samples/s', b.samples_per_s.toFixed(1)], ['memory per GPU', fmtBytes(b.peak_mem_bytes)]];
  }
  const worst = r.gpus.reduce((a, x) => Math.max(a, x.peak_mem_bytes), 0);
  return [['GPUs', r.plan.gpus], ['plan', 'dp ' + r.plan.dp + ' × tp ' + r.plan.tp + ' × pp ' + r.plan.pp],
          ['step', fmtMs(r.step_ms)], ['samples/s', r.samples_per_s.toFixed(1)], ['network', r.topology || r.network],
          ['memory per GPU', fmtBytes(worst)]];
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

/* ---- start ------------------------------------------------------------------------------------- */

async function start() {
  try {
    const opts = await api('/api/options');
    state.options = opts;
    state.values = opts.values;
    state.traces = await api('/api/traces');
  } catch (e) {
    $('run-why').textContent = 'Cannot reach the server: ' + e.message;
    return;
  }
  $('option-names').textContent = state.options.compare.map((f) => f.name).join(', ');
  fillGpus();
  fillTraces();
  $('trace').addEventListener('change', chooseTrace);
  $('preset').addEventListener('change', applyPreset);
  $('upload-btn').addEventListener('click', upload);
  $('run').addEventListener('click', run);
  $('side-by-side-btn').addEventListener('click', sideBySide);
  for (const e of document.querySelectorAll('input, select, textarea'))
    if (e.id !== 'trace' && e.id !== 'preset' && !e.id.startsWith('upload')) e.addEventListener('input', validate);
  applyPreset();
  if (state.traces.length) await chooseTrace();
}
start();
