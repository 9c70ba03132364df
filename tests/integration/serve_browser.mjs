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

  // 3. run one plan (DDP over 8 GPUs), asking for the timeline and the CSV tables, and wait for the answer
  await page.click('#want-timeline');
  await page.click('#want-csv');
  const answer = await runAndWait();
  const sim = await runApi(1);
  check(sim.status === 'done', 'run 1 done (' + (sim.error || '') + ')');
  // one GPU does 8 samples in traced_step_ms; 8 GPUs do samples_per_s: 58.08 x 1.1019 / 8 = 8.0x
  // the CPU trace on the DGX-H100 preset runs on analytical H100 op times: no speed-up over the
  // traced CPU step is claimed, and the sentence says where the times come from
  check(sim.result.recorded_on.kind === 'cpu' && sim.result.ranks === 'gpus', 'a CPU trace on H100s runs as GPUs');
  check(/^8 GPUs: [0-9.]+ (ms|s) per step \(GPU op times from the analytical model: the trace was recorded on a CPU\); (<1|[0-9]+)% of the time is waiting for the network(, (<1|[0-9]+)% for other GPUs[^.]*)?\.$/.test(answer),
        'the answer sentence: "' + answer + '"');
  check(!answer.includes('× one GPU'), 'no speed-up over the CPU-recorded step');
  const ms = sim.result.step_ms;
  const stepShown = ms >= 1000 ? (ms / 1000).toPrecision(3) + ' s' : ms >= 10 ? ms.toFixed(0) + ' ms' : ms.toPrecision(2) + ' ms';
  check(answer.includes(stepShown + ' per step'), 'the step time is the API\'s (' + stepShown + ')');
  check(sim.result.plan.global_batch === 8 * 8 && (await text('#answer-detail')).includes('Global batch 64 = traced 8 × 8 GPUs'),
        'simulate ran the batch rule: global batch 64 = traced 8 x 8 GPUs ("' + await text('#answer-detail') + '")');

  // the report's charts are in the DOM (report/html.c's sections, in the iframe)
  const frame = await (await page.waitForSelector('#report[src]')).contentFrame();
  await frame.waitForSelector('svg#gpu-bars');
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
        m[5] === (100 * (w.run_ms - w.base_ms) / w.base_ms).toFixed(1), 'the what-if sentence: "' + wAnswer + '"');
  if ('peer_wait_ms' in wi.result.gpus[0]) {
    // the others wait for GPU 1: peer wait, named, never network time
    const net = wi.result.gpus.reduce((a, x) => a + x.exposed_comm_ms, 0) / wi.result.gpus.length / wi.result.step_ms * 100;
    check(wAnswer.includes('for other GPUs (most of it for GPU 1,'), 'the straggler sentence names GPU 1: "' + wAnswer + '"');
    check(wAnswer.includes((net > 0 && net < 0.5 ? '<1' : net.toFixed(0)) + '% of the time is waiting for the network'),
          'the network share is exposed communication only (' + net.toFixed(2) + '%)');
  } else {
    console.log('serve_browser: skipped: the straggler sentence (the server\'s JSON has no peer_wait_ms yet)');
  }
  await page.click('#slow-gpu-on');

  // the sentence's arithmetic on a made-up run (4 GPUs, 100 ms steps): GPUs 0, 2, 3 wait 50 + 40 +
  // 30 ms for GPU 1 and 4 ms for the network: 4/400 = 1% network, 120/400 = 30% other GPUs
  const made = await page.evaluate(() => {
    const gpu = (rank, exposed, peer, wf) => ({ rank, exposed_comm_ms: exposed, peer_wait_ms: peer, waited_for: wf, waited_for_ms: peer });
    const r = { plan: { gpus: 4 }, step_ms: 100, samples_per_s: 0, traced_step_ms: 100,
                gpus: [gpu(0, 1, 50, 1), gpu(1, 1, 0, null), gpu(2, 2, 40, 1), gpu(3, 0, 30, 1)] };
    const old = { plan: { gpus: 4 }, step_ms: 100, samples_per_s: 0, traced_step_ms: 100,
                  gpus: r.gpus.map((x) => ({ rank: x.rank, exposed_comm_ms: x.exposed_comm_ms })) };
    const h = (res) => ({ req: { command: 'simulate', options: {} }, result: res, summary: null });
    return [sentence(h(r)), sentence(h(old))];
  });
  check(made[0] === '4 GPUs: 100 ms per step; 1% of the time is waiting for the network, 30% for other GPUs ' +
        '(most of it for GPU 1, the one the others wait for).', 'peer waits apart from the network: "' + made[0] + '"');
  check(made[1] === '4 GPUs: 100 ms per step; 1% of the time is waiting for the network.',
        'without peer_wait_ms, the sentence of before: "' + made[1] + '"');

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
  check(cAnswer.startsWith('Fastest of ' + rows.length + ' plans on 8 GPUs: ' + rows[0].label),
        'the compare answer names the fastest plan: "' + cAnswer + '"');
  check(rows.length > 10 && (await text('#ranking caption')).startsWith('Top 10 of ' + rows.length + ' plans that ran'),
        'the ranking says it is cut: "' + await text('#ranking caption') + '"');
  check(rows.every((r) => r.plan.global_batch === 64) && (await text('#answer-detail')).includes('Global batch 64 = traced 8 × 8 GPUs for every plan'),
        'compare runs the same batch rule as simulate: 64 for every plan');
  const cframe = await (await page.waitForSelector('#report[src="/api/runs/3/report.html"]')).contentFrame();
  await cframe.waitForSelector('svg#compare-chart rect');
  check(true, 'the comparison chart drawn');
  const memCol = await cframe.$$eval('table#plans tr', (trs) => trs.slice(1).map((tr) => tr.lastElementChild.textContent));
  check(memCol.length === rows.length && memCol.every((t) => t.length > 0), 'the report\'s memory column is filled ("' + memCol[0] + '")');
  await page.screenshot({ path: path.join(shots, 'serve-compare.png'), fullPage: true });

  // 4b. plan counts that agree: a trace some plans cannot run (4 attention heads: no tp 8)
  await page.select('#trace', 'shipped/cpu-gpt-tiny-b8');
  await page.waitForFunction(() => document.querySelector('#trace-summary').textContent.includes('37 layers'));
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
  const gAnswer = await runAndWait(90000);
  const g = await runApi(4);
  check(g.status === 'done', 'run 4 (compare, gpt-tiny) done (' + (g.error || '') + ')');
  const ran = g.result.rows.length, skipped = g.result.skipped.length;
  check(skipped >= 1 && g.result.skipped.some((x) => x.label.includes('tp=8')), 'tp 8 is skipped on 4 attention heads');
  check(gAnswer.startsWith('Fastest of ' + ran + ' plans on 8 GPUs (' + skipped + ' more skipped): '), 'the headline counts ran and skipped plans: "' + gAnswer + '"');
  const listed = await page.$$eval('#skipped li b', (b) => b.reduce((a, x) => a + parseInt(x.textContent, 10), 0));
  check(listed === skipped, 'the skipped plans listed with why (' + listed + ')');
  const gframe = await (await page.waitForSelector('#report[src="/api/runs/4/report.html"]')).contentFrame();
  const compared = await gframe.$eval('table', (t) => t.textContent);
  check(compared.includes((ran + skipped) + ' plans on 8 GPUs: ' + ran + ' ran'), 'the report\'s count agrees with the headline');
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
  check(pageErrors.length === 0, 'no JavaScript error in the page (' + pageErrors.join('; ') + ')');
} catch (e) {
  console.error('serve_browser: FAIL: ' + (e && e.stack ? e.stack : e));
  await page.screenshot({ path: path.join(shots, 'serve-failure.png'), fullPage: true }).catch(() => {});
  await browser.close();
  process.exit(1);
}
await browser.close();
