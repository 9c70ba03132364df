// tests/integration/serve_browser.mjs — drives the web UI of `mitosis serve` in Debian's headless
// Chromium through puppeteer-core (serve_browser.sh installs it and starts the server).
// argv: URL, puppeteer-core's folder, screenshot folder, chromium path. Exit 0 on success; a failed
// check prints "serve_browser: FAIL: ..." and exits 1.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import fs from 'node:fs';
import path from 'node:path';

const [url, pptrDir, shots, chromium] = process.argv.slice(2);
const require = createRequire(path.join(pptrDir, 'package.json'));
const puppeteer = (await import(pathToFileURL(require.resolve('puppeteer-core')).href)).default;

function check(cond, what) {
  if (!cond) {
    console.error('serve_browser: FAIL: ' + what);
    process.exit(1);
  }
  console.log('serve_browser: ok: ' + what);
}

const args = ['--headless=new', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'];
if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
const browser = await puppeteer.launch({ executablePath: chromium, args, timeout: 30000 });
const page = await browser.newPage();
await page.setViewport({ width: 1200, height: 1800 });
const pageErrors = [];
page.on('pageerror', (e) => pageErrors.push(e.message));
page.setDefaultTimeout(45000);

const text = (sel) => page.$eval(sel, (e) => e.textContent.trim());
const runApi = (id) => page.evaluate(async (i) => (await fetch('/api/runs/' + i)).json(), id);
const setValue = (sel, v) => page.$eval(sel, (e, x) => { e.value = x; e.dispatchEvent(new Event('input')); }, v);
let answersSeen = 0;
// Run, and the answer's sentence once the run is done (or its error)
async function runAndWait(timeout) {
  await page.click('#run');
  answersSeen++;
  await page.waitForFunction((n) => document.querySelectorAll('#history li').length >= n &&
    !/queued|running/.test(document.querySelector('#history li:last-child').textContent) &&
    (document.querySelector('#answer').textContent.length > 0 || document.querySelector('#run-error').textContent.length > 0),
  { timeout: timeout || 45000 }, answersSeen);
  return text('#answer');
}

try {
  // 1. open the page, choose a shipped trace: its summary shows the traced batch
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('#trace option[value="shipped/cpu-resnet18-b8"]');
  await page.select('#trace', 'shipped/cpu-resnet18-b8');
  await page.waitForFunction(() => /Batch[^]*8/.test(document.querySelector('#trace-summary').textContent) &&
                                   document.querySelector('#trace-summary').textContent.includes('41 layers'));
  check(true, 'the trace summary shows batch 8 and 41 layers');

  // 2. 8 GPUs on the DGX-H100 preset (the default preset; set it explicitly)
  await page.select('#preset', 'dgx-h100');
  check(await text('#total-gpus') === '8', 'DGX-H100 preset: 8 GPUs per node x 1 node');

  // the wafer preset is the photonic model's defaults as the server sent them (values.photonic)
  const ph = await page.evaluate(() => fetch('/api/options').then((r) => r.json()).then((o) => o.values.photonic));
  await page.select('#preset', 'wafer');
  const wafer = await text('#preset-help');
  check(await text('#total-gpus') === String(ph.endpoints) && wafer.includes(ph.ports + ' ports per GPU') &&
        wafer.includes(ph.total_bw_Bps / 1e9 + ' GB/s') && wafer.includes(ph.setup_ns / 1e6 + ' ms'),
        `the wafer preset shows the server's photonic defaults (${JSON.stringify(ph)}): ${wafer}`);
  await page.select('#preset', 'dgx-h100');

  // an impossible combination keeps Run disabled, with a message, as you type
  await page.click('#mode-plan');
  await page.type('#pp', '3');
  await page.waitForFunction(() => document.querySelector('#run').disabled);
  check((await text('#err-tp')).includes('must divide the 8 GPUs'), 'pipeline 3 on 8 GPUs is refused as typed');
  await setValue('#pp', '');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);

  // the batch rule, shown as you type: empty = traced 8 x 8 GPUs, whatever the plan
  await setValue('#tp', '2');
  await page.waitForFunction(() => document.querySelector('#batch-rule').textContent.includes('replicas'));
  const rule = await text('#batch-rule');
  check(rule.includes('global batch 64 = traced 8 × 8 GPUs, 16 samples per replica × 4 replicas'),
        'the batch rule for tp 2 on 8 GPUs: "' + rule + '"');
  await setValue('#tp', '');
  await setValue('#batch', '7');
  await page.waitForFunction(() => document.querySelector('#err-batch').textContent.length > 0);
  check((await text('#err-batch')).includes('7 does not divide over 8 data-parallel replicas'), 'global batch 7 on 8 replicas refused as typed');
  await setValue('#batch', '');

  // the experts' box: bad JSON and an unknown option are refused as typed
  await page.click('#advanced summary');
  await setValue('#extra', '{"recompute": ');
  await page.waitForFunction(() => document.querySelector('#err-extra').textContent.startsWith('Not JSON'));
  check(true, 'bad JSON in the experts\' box refused as typed');
  await setValue('#extra', '{"frobnicate": 1}');
  await page.waitForFunction(() => document.querySelector('#err-extra').textContent.includes('Unknown option "frobnicate"'));
  check(true, 'an unknown option in the experts\' box refused as typed');
  await setValue('#extra', '');

  // limits the page cannot know: the server's check (POST /api/check) as you type
  await setValue('#intra-bw', '1e-9');
  await page.waitForFunction(() => document.querySelector('#err-intra-bw').textContent.length > 0);
  check((await text('#err-intra-bw')).includes('floor of 1MB/s'), 'bandwidth 1e-9 GB/s refused as typed: "' + await text('#err-intra-bw') + '"');
  await setValue('#intra-bw', '450');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);

  // the GPU choice for a CPU trace: no "Trace recorded on" (a CPU names no GPU to move times
  // from), the catalogue's GPUs as the GPU to predict for (--target-gpu), the same list as the CLI's
  check(await page.$eval('#row-trace-gpu', (e) => e.hidden), 'a CPU trace hides "Trace recorded on"');
  const gpuNames = await page.$$eval('#gpu-type option', (o) => o.map((x) => x.value));
  check(['H100-SXM', 'H200', 'B200', 'A100-80GB', 'MI300X'].every((g) => gpuNames.includes(g)),
        'the GPU list is the catalogue (' + gpuNames.length + ' entries)');
  await page.select('#gpu-type', 'A100-80GB');
  check((await text('#gpu-type-help')).includes('recorded on a CPU'), 'the GPU field says how a CPU trace is moved');

  // 3. run one plan (DDP over 8 GPUs), asking for the timeline and the CSV tables, and wait for the answer
  await page.click('#want-timeline');
  await page.click('#want-csv');
  const answer = await runAndWait();
  const sim = await runApi(1);
  check(sim.status === 'done', 'run 1 done (' + (sim.error || '') + ')');
  // the CPU trace on A100s runs on analytical A100 op times, its one-GPU baseline too: the speed-up
  // and efficiency are the server's (report/verdict.h), shown as it sent them
  check(sim.result.recorded_on.kind === 'cpu' && sim.result.ranks === 'gpus' && sim.result.target_gpu === 'A100-80GB',
        'a CPU trace predicted on the chosen A100s (target_gpu ' + sim.result.target_gpu + ')');
  // at most 8 on 8 GPUs (issue 46.10: it said 14.1x, a CPU baseline against analytical GPUs)
  check(sim.result.speedup > 0 && sim.result.speedup <= 8 && Math.abs(sim.result.efficiency - sim.result.speedup / 8) < 1e-9 &&
        sim.result.one_gpu.step_ms > 0, 'the server sent the speed-up ' + sim.result.speedup + ' (at most 8 on 8 GPUs) and efficiency ' +
        sim.result.efficiency);
  const spText = sim.result.speedup.toFixed(2) + '× one GPU (' + (100 * sim.result.efficiency).toFixed(0) + '% efficiency)';
  check(/^8 GPUs: [0-9.]+ (ms|s) per step, [0-9.]+× one GPU \([0-9]+% efficiency\) \(GPU op times from the analytical model: the trace was recorded on a CPU\)\. (What holds|Nothing but compute holds) /.test(answer) &&
        answer.includes(spText) && answer.includes(sim.result.holdback.text),
        'the answer sentence: "' + answer + '"');
  // warnings beside the answer (a CPU trace on GPUs: the host it does not count) and in the report
  check(sim.result.warnings.length > 0, 'the run has warnings (' + sim.result.warnings.length + ')');
  const shownWarnings = await page.$$eval('#warnings li', (li) => li.map((x) => x.textContent));
  check(sim.result.warnings.every((w) => shownWarnings.includes(w)) && !(await page.$eval('#warnings', (e) => e.hidden)),
        'the warnings shown beside the answer: "' + shownWarnings[0].slice(0, 80) + '..."');
  const ms = sim.result.step_ms;
  const stepShown = ms >= 1000 ? (ms / 1000).toPrecision(3) + ' s' : ms >= 10 ? ms.toFixed(0) + ' ms' : ms.toPrecision(2) + ' ms';
  check(answer.includes(stepShown + ' per step'), 'the step time is the API\'s (' + stepShown + ')');
  check(await page.$eval('#waits-box', (e) => e.hidden) === !sim.result.waits.lines.length, 'the waits shown only when the server sent some');
  check(sim.result.plan.global_batch === 8 * 8 && (await text('#answer-detail')).includes('Global batch 64 = traced 8 × 8 GPUs'),
        'simulate ran the batch rule: global batch 64 = traced 8 x 8 GPUs ("' + await text('#answer-detail') + '")');

  // the report's charts are in the DOM (report/html.c's sections, in the iframe)
  const frame = await (await page.waitForSelector('#report[src]')).contentFrame();
  await frame.waitForSelector('svg#gpu-bars');
  const reportText = await frame.$eval('body', (b) => b.textContent);
  check(reportText.includes(sim.result.warnings[0]) && reportText.includes(sim.result.holdback.text),
        'the report carries the warnings and what holds the step back');
  const bars = await frame.$$eval('svg#gpu-bars rect', (r) => r.length);
  check(bars >= 8, 'per-GPU bars drawn (' + bars + ' rects)');
  check(await frame.$('svg#layer-bars rect') !== null, 'per-layer bars drawn');
  check(await frame.$('svg#gantt rect') !== null, 'the Gantt chart drawn');
  const links = await page.$$eval('#downloads a', (a) => a.map((x) => x.getAttribute('href')));
  check(['result.json', 'report.html', 'timeline.json', 'csv/gpus.csv'].every((f) => links.includes('/api/runs/1/' + f)),
        'downloads: JSON, HTML, timeline, CSV (asked for)');
  await page.click('#want-timeline'); // the next runs ask for no optional file
  await page.click('#want-csv');
  await page.screenshot({ path: path.join(shots, 'serve-simulate.png'), fullPage: true });

  // 3b. the what-if: GPU 1 computes 2x slower; the sentence says what it cost
  await page.click('#whatif summary');
  await page.click('#slow-gpu-on');
  await setValue('#slow-gpu-rank', '1');
  await setValue('#slow-gpu-factor', '2');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
  const wAnswer = await runAndWait();
  const wi = await runApi(2);
  check(wi.status === 'done' && wi.result.whatif, 'run 2 (what-if) done with its cost (' + (wi.error || '') + ')');
  const w = wi.result.whatif;
  // the baseline of the what-if is run 1: the same plan, unperturbed
  check(Math.abs(w.base_ms - sim.result.step_ms) <= 1e-6 * sim.result.step_ms, 'the what-if\'s baseline is run 1\'s step (' + w.base_ms + ' ms)');
  check(w.run_ms > w.base_ms, 'a GPU 2x slower makes the step longer (' + w.base_ms + ' -> ' + w.run_ms + ' ms)');
  // (the page shows 2 significant digits under 10 ms, 3 above: within 2 %)
  const m = /what-if: ([0-9.]+) (ms|s) → ([0-9.]+) (ms|s) per step \(\+([0-9.]+)%\)/.exec(wAnswer);
  const inMs = (v, u) => Number(v) * (u === 's' ? 1000 : 1);
  check(m && Math.abs(inMs(m[1], m[2]) - w.base_ms) <= 0.02 * w.base_ms && Math.abs(inMs(m[3], m[4]) - w.run_ms) <= 0.02 * w.run_ms &&
        Math.abs(w.change_pct - 100 * (w.run_ms - w.base_ms) / w.base_ms) < 1e-6 && m[5] === w.change_pct.toFixed(1),
        'the what-if sentence, its change the server\'s (' + w.change_pct + '%): "' + wAnswer + '"');
  // the others wait for GPU 1: what holds the step back is waiting for peers, and the page shows
  // the server's waits lines (report/waits.h), GPU 1 the one waited for, each line's ms its text's
  const wl = wi.result.waits.lines;
  check(wi.result.holdback.kind === 'peers' && wAnswer.includes(wi.result.holdback.text) && wl.length > 0 &&
        wl.every((x) => x.waited_for.length === 1 && x.waited_for[0] === 1 && !x.gpus.includes(1) && x.ms > 0 &&
                        x.text.includes(' ' + x.ms.toFixed(3) + ' ms') && /for GPU 1( \(|$)/.test(x.text)),
        'the straggler run: peers hold the step back, the waits lines name GPU 1 (' + wl.map((x) => x.text).join('; ') + ')');
  const shownWaits = await page.$$eval('#waits li', (li) => li.map((x) => x.textContent));
  check(!(await page.$eval('#waits-box', (e) => e.hidden)) && shownWaits.length === wl.length + (wi.result.waits.more_gpus > 0) &&
        wl.every((x, i) => shownWaits[i] === x.text), 'the page shows the server\'s waits lines: "' + shownWaits[0] + '"');
  await page.click('#slow-gpu-on');

  // 4. which plan is fastest? (compare) and its ranking
  await page.click('#mode-compare');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
  const cAnswer = await runAndWait(90000);
  const cmp = await runApi(3);
  check(cmp.status === 'done', 'run 3 (compare) done (' + (cmp.error || '') + ')');
  const rows = cmp.result.rows;
  check(rows.every((r, i) => i === 0 || rows[i - 1].step_ms <= r.step_ms), 'the API ranks plans fastest first');
  const shown = await page.$$eval('#ranking tr', (trs) => trs.slice(1).map((tr) => tr.children[1].textContent));
  check(shown.length === Math.min(10, rows.length) && shown.every((l, i) => l === rows[i].label),
        'the ranking table shows the API\'s order (' + shown.slice(0, 3).join(', ') + ', ...)');
  const cPruned = (cmp.result.pruned || []).length;
  check(cPruned > 0 && cmp.result.exact_rows === 10 && rows.length >= 10,
        'a search of every plan keeps its first 10 rows exact and prunes plans that cannot reach them (' + cPruned + ' pruned)');
  check(cAnswer.startsWith('Fastest of ' + (rows.length + cPruned) + ' plans on 8 GPUs (' + cPruned + ' pruned: they cannot beat it): ' + rows[0].label),
        'the compare answer names the fastest plan and counts the pruned ones: "' + cAnswer + '"');
  const cCaption = await text('#ranking caption');
  check(cCaption.startsWith((rows.length > 10 ? 'Top 10 of ' : 'All ') + rows.length + ' plans that ran') &&
        cCaption.includes('; ' + cPruned + ' pruned (below). ' + (rows.length + cPruned) + ' plans tried in all.'),
        'the ranking says what ran and what was pruned: "' + cCaption + '"');
  const cListed = await page.$$eval('#skipped li b', (b) => b.reduce((a, x) => a + parseInt(x.textContent, 10), 0));
  check(cListed === cPruned && (await text('#skipped')).includes(cPruned + ' plans were pruned, not simulated'),
        'the pruned plans listed with their bound (' + cListed + ')');
  check(rows.every((r) => r.plan.global_batch === 64) && (await text('#answer-detail')).includes('Global batch 64 = traced 8 × 8 GPUs for every plan'),
        'compare runs the same batch rule as simulate: 64 for every plan');
  const cframe = await (await page.waitForSelector('#report[src="/api/runs/3/report.html"]')).contentFrame();
  await cframe.waitForSelector('svg#compare-chart rect');
  check(true, 'the comparison chart drawn');
  const memCol = await cframe.$$eval('table#plans tr', (trs) => trs.slice(1).filter((tr) => tr.children.length > 3).map((tr) => tr.lastElementChild.textContent));
  check(memCol.length === rows.length && memCol.every((t) => t.length > 0), 'the report\'s memory column is filled for every ranked plan ("' + memCol[0] + '")');
  const prunedRows = await cframe.$$eval('table#plans tr.skip', (trs) => trs.filter((tr) => tr.textContent.includes('pruned: bound')).length);
  check(prunedRows === cPruned, 'the report lists the pruned plans as pruned, with their bound (' + prunedRows + ')');
  await page.screenshot({ path: path.join(shots, 'serve-compare.png'), fullPage: true });

  // 4b. plan counts that agree: a trace some plans cannot run (4 attention heads: no tp 8)
  await page.select('#trace', 'shipped/cpu-gpt-tiny-b8');
  await page.waitForFunction(() => document.querySelector('#trace-summary').textContent.includes('37 layers'));
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
  const gAnswer = await runAndWait(90000);
  const g = await runApi(4);
  check(g.status === 'done', 'run 4 (compare, gpt-tiny) done (' + (g.error || '') + ')');
  const ran = g.result.rows.length, skipped = g.result.skipped.length, gPruned = (g.result.pruned || []).length;
  check(skipped >= 1 && g.result.skipped.some((x) => x.label.includes('tp=8')), 'tp 8 is skipped on 4 attention heads');
  check(gAnswer.startsWith('Fastest of ' + (ran + gPruned) + ' plans on 8 GPUs (' + skipped + ' more skipped' +
                           (gPruned ? ', ' + gPruned + ' pruned: they cannot beat it' : '') + '): '),
        'the headline counts ran, skipped and pruned plans: "' + gAnswer + '"');
  const listed = await page.$$eval('#skipped li b', (b) => b.reduce((a, x) => a + parseInt(x.textContent, 10), 0));
  check(listed === skipped + gPruned, 'the skipped and pruned plans listed with why (' + listed + ')');
  const gframe = await (await page.waitForSelector('#report[src="/api/runs/4/report.html"]')).contentFrame();
  const compared = await gframe.$eval('table', (t) => t.textContent);
  check(compared.includes((ran + skipped + gPruned) + ' plans on 8 GPUs: ' + ran + ' ran'), 'the report\'s count agrees with the headline');
  await page.screenshot({ path: path.join(shots, 'serve-skipped.png'), fullPage: true });

  // 5. the two runs side by side
  await page.click('#history input[data-id="1"]');
  await page.click('#history input[data-id="3"]');
  await page.click('#side-by-side-btn');
  check((await page.$$('#side-by-side .card')).length === 2, 'two runs side by side');

  // too many plans (100000 GPUs per node) is refused before Run, by the server's check
  await setValue('#gpus-per-node', '100000');
  await page.waitForFunction(() => document.querySelector('#run-why').textContent.includes('too many'));
  check(await page.$eval('#run', (b) => b.disabled), 'a comparison of 100000 GPUs refused as typed: "' + await text('#run-why') + '"');
  await setValue('#gpus-per-node', '8');

  // 6. a bad upload shows an error and the server lives on
  const junk = path.join(shots, 'not-a-trace.json');
  fs.writeFileSync(junk, '{"this is": "not a trace"}');
  await page.click('#upload-box summary');
  const input = await page.$('#upload-files');
  await input.uploadFile(junk);
  await page.click('#upload-btn');
  await page.waitForFunction(() => document.querySelector('#upload-error').textContent.length > 0);
  const upErr = await text('#upload-error');
  check(upErr.startsWith('Upload refused: upload: file-0: JSON is neither'), 'a bad upload shows the reader\'s error: "' + upErr.slice(0, 120) + '"');
  await page.screenshot({ path: path.join(shots, 'serve-bad-upload.png'), fullPage: true });
  const alive = await page.evaluate(async () => (await fetch('/api/traces')).status);
  check(alive === 200, 'the server answers after the bad upload');
  // 7. the speed-up is compare's (one function: report/verdict.h), and the sentence names what holds
  // the step back, from the server: GPT-2 on 8 H100s is launch-bound (the GPUs wait for the host)
  await page.select('#trace', 'shipped/h100-gpt2-b8-bf16');
  await page.waitForFunction(() => document.querySelector('#trace-summary').textContent.includes('H100'));
  check(await page.$eval('#row-trace-gpu', (e) => e.hidden), 'an H100 trace names its GPU: no "Trace recorded on" to ask');
  await page.select('#gpu-type', '');
  await page.click('#mode-plan');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
  const hAnswer = await runAndWait();
  const h = await runApi(5);
  check(h.status === 'done' && h.result.speedup > 7.9 && h.result.speedup <= 8,
        'GPT-2 on 8 H100s: speed-up ' + (h.result.speedup || 0).toFixed(3) + ' over one GPU\'s ' + (h.result.one_gpu || {}).step_ms + ' ms step');
  const hostShare = h.result.gpus.reduce((a, x) => a + x.host_wait_ms, 0) / h.result.gpus.length / h.result.step_ms;
  check(h.result.holdback.kind === 'host' && Math.abs(h.result.holdback.share - hostShare) < 1e-6 &&
        hAnswer.includes(h.result.speedup.toFixed(2) + '× one GPU') && hAnswer.includes('waiting for the host'),
        'the sentence names the host (' + (100 * hostShare).toFixed(1) + '% of the step): "' + hAnswer + '"');
  await page.click('#mode-compare');
  await page.click('#advanced summary');
  await setValue('#extra', '{"plans": "ddp=8"}');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
  await runAndWait();
  const hc = await runApi(6);
  check(hc.status === 'done' && hc.result.rows.length === 1 && Math.abs(hc.result.rows[0].speedup - h.result.speedup) <= 1e-9 * h.result.speedup &&
        hc.result.rows[0].holdback.kind === 'host', 'compare\'s ddp=8 row has the same speed-up (' + hc.result.rows[0].speedup + ') and holdback');
  const effCell = await page.$$eval('#ranking tr', (trs) => trs[1].children[4].textContent);
  check(effCell === (100 * hc.result.rows[0].efficiency).toFixed(0) + '%', 'the ranking shows the server\'s efficiency (' + effCell + ')');
  await setValue('#extra', '');

  // 8. --blocks and the LLM options as fields made from the flag table (GET /api/options)
  await page.select('#trace', 'shipped/cpu-gpt-tiny-b8');
  await page.waitForFunction(() => document.querySelector('#trace-summary').textContent.includes('37 layers'));
  await page.click('#mode-plan');
  await setValue('#gpus-per-node', '2');
  await page.click('#model-box summary');
  const opts = await page.evaluate(async () => (await fetch('/api/options')).json());
  const blocksFlag = opts.simulate.find((f) => f.name === 'blocks');
  check((await page.$eval('#opt-blocks', (e) => e.parentNode.querySelector('small').textContent)) === blocksFlag.help,
        'the --blocks field carries the flag table\'s help');
  await setValue('#opt-fsdp-prefetch', '-1');
  await page.waitForFunction(() => document.querySelector('#err-opt-fsdp-prefetch').textContent.length > 0);
  check((await text('#err-opt-fsdp-prefetch')).includes('(the limits of --fsdp-prefetch)'), 'a field out of the flag\'s range refused as typed');
  await setValue('#opt-fsdp-prefetch', '');
  await setValue('#opt-blocks', '8');
  await setValue('#opt-precision', 'bf16-mixed');
  await setValue('#opt-recompute', 'every:2');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
  await runAndWait();
  const b = await runApi(7);
  check(b.status === 'done' && b.result.blocks.count === 8 && b.result.precision.assumed.startsWith('bf16-mixed') &&
        b.result.recompute === 'every:2', 'blocks 8, bf16-mixed, recompute every:2 ran (' + (b.error || b.result.recompute) + ')');
  check((await text('#answer-detail')).includes('the model of 8 blocks (the trace has ' + b.result.blocks.traced + ': --blocks)'),
        'the answer says 8 blocks were used: "' + await text('#answer-detail') + '"');
  for (const f of ['opt-blocks', 'opt-precision', 'opt-recompute']) await setValue('#' + f, '');

  // 9. several jobs on one fabric (mitosis cluster): two jobs, placed spread, a slow fabric
  await page.click('#mode-cluster');
  await page.waitForFunction(() => document.querySelectorAll('#cluster-jobs tr[data-job]').length === 2);
  check(await page.$eval('#step-cluster', (e) => e.hidden), 'cluster mode: the fabric replaces the one-job cluster');
  await page.$eval('#cluster-jobs tr[data-job="1"] .cj-name', (e) => { e.value = 'joba'; e.dispatchEvent(new Event('input')); });
  await page.waitForFunction(() => document.querySelector('#err-cluster').textContent.includes('Two jobs are named "joba"'));
  check(true, 'two jobs of one name refused as typed');
  await page.$eval('#cluster-jobs tr[data-job="1"] .cj-name', (e) => { e.value = 'jobb'; e.dispatchEvent(new Event('input')); });
  await page.select('#cl-placement', 'spread');
  await setValue('#cl-link-bw', '2');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
  const clAnswer = await runAndWait();
  const cl = await runApi(8);
  check(cl.status === 'done' && cl.result.jobs.length === 2 && cl.result.jobs.every((j) => j.placement === 'spread' && j.gpus === 4),
        'the cluster ran two jobs of 4 GPUs, spread (' + (cl.error || '') + ')');
  check(clAnswer.startsWith('2 jobs on fattree:k=4 (16 GPUs): worst slowdown ' + cl.result.worst_slowdown.toFixed(2) + '× (job ' + cl.result.worst_job + ')'),
        'the cluster sentence: "' + clAnswer + '"');
  check((await page.$$('#cluster-table tr')).length === 3, 'a row per job, with its slowdown');
  const clFrame = await (await page.waitForSelector('#report[src="/api/runs/8/report.html"]')).contentFrame();
  await clFrame.waitForSelector('table.heat');
  check(true, 'the shared links\' heat map drawn');
  const clLinks = await page.$$eval('#downloads a', (a) => a.map((x) => x.getAttribute('href')));
  check(clLinks.includes('/api/runs/8/cluster.json'), 'the job file to download (mitosis cluster FILE)');
  await page.screenshot({ path: path.join(shots, 'serve-cluster.png'), fullPage: true });

  check(pageErrors.length === 0, 'no JavaScript error in the page (' + pageErrors.join('; ') + ')');
} catch (e) {
  console.error('serve_browser: FAIL: ' + (e && e.stack ? e.stack : e));
  await page.screenshot({ path: path.join(shots, 'serve-failure.png'), fullPage: true }).catch(() => {});
  await browser.close();
  process.exit(1);
}
await browser.close();
