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
  await page.$eval('#pp', (e) => { e.value = ''; e.dispatchEvent(new Event('input')); });
  await page.waitForFunction(() => !document.querySelector('#run').disabled);

  // 3. run one plan (DDP over 8 GPUs) and wait for the answer
  await page.click('#run');
  await page.waitForFunction(() => document.querySelector('#answer').textContent.length > 0 ||
                                   document.querySelector('#run-error').textContent.length > 0);
  const answer = await text('#answer');
  const sim = await runApi(1);
  check(sim.status === 'done', 'run 1 done (' + (sim.error || '') + ')');
  // one GPU does 8 samples in traced_step_ms; 8 GPUs do samples_per_s: 58.08 x 1.1019 / 8 = 8.0x
  const speedup = sim.result.samples_per_s * sim.result.traced_step_ms / 1000 / 8;
  check(/^8 GPUs: [0-9.]+ (ms|s) per step, [0-9.]+× one GPU; [0-9]+% of the time is waiting for the network\.$/.test(answer),
        'the answer sentence: "' + answer + '"');
  check(answer.includes(speedup.toFixed(1) + '× one GPU'), 'the speed-up in the sentence is the API\'s ' + speedup.toFixed(2));
  check(answer.includes((sim.result.step_ms / 1000).toPrecision(3) + ' s per step'), 'the step time is the API\'s');

  // the report's charts are in the DOM (report/html.c's sections, in the iframe)
  const frame = await (await page.waitForSelector('#report[src]')).contentFrame();
  await frame.waitForSelector('svg#gpu-bars');
  const bars = await frame.$$eval('svg#gpu-bars rect', (r) => r.length);
  check(bars >= 8, 'per-GPU bars drawn (' + bars + ' rects)');
  check(await frame.$('svg#layer-bars rect') !== null, 'per-layer bars drawn');
  check(await frame.$('svg#gantt rect') !== null, 'the Gantt chart drawn');
  const links = await page.$$eval('#downloads a', (a) => a.map((x) => x.getAttribute('href')));
  check(['result.json', 'report.html', 'timeline.json', 'csv/gpus.csv'].every((f) => links.includes('/api/runs/1/' + f)),
        'downloads: JSON, HTML, timeline, CSV');
  await page.screenshot({ path: path.join(shots, 'serve-simulate.png'), fullPage: true });

  // 4. which plan is fastest? (compare) and its ranking
  await page.click('#mode-compare');
  await page.waitForFunction(() => !document.querySelector('#run').disabled);
  await page.click('#run');
  await page.waitForFunction(() => document.querySelector('#answer').textContent.startsWith('Fastest') ||
                                   document.querySelector('#run-error').textContent.length > 0, { timeout: 90000 });
  const cmp = await runApi(2);
  check(cmp.status === 'done', 'run 2 (compare) done (' + (cmp.error || '') + ')');
  const rows = cmp.result.rows;
  check(rows.every((r, i) => i === 0 || rows[i - 1].step_ms <= r.step_ms), 'the API ranks plans fastest first');
  const shown = await page.$$eval('#ranking tr', (trs) => trs.slice(1).map((tr) => tr.children[1].textContent));
  check(shown.length === Math.min(10, rows.length) && shown.every((l, i) => l === rows[i].label),
        'the ranking table shows the API\'s order (' + shown.slice(0, 3).join(', ') + ', ...)');
  check((await text('#answer')).startsWith('Fastest of ' + rows.length + ' plans on 8 GPUs: ' + rows[0].label),
        'the compare answer names the fastest plan');
  const cframe = await (await page.waitForSelector('#report[src="/api/runs/2/report.html"]')).contentFrame();
  await cframe.waitForSelector('svg#compare-chart rect');
  check(true, 'the comparison chart drawn');
  await page.screenshot({ path: path.join(shots, 'serve-compare.png'), fullPage: true });

  // 5. the two runs side by side
  await page.click('#history input[data-id="1"]');
  await page.click('#history input[data-id="2"]');
  await page.click('#side-by-side-btn');
  check((await page.$$('#side-by-side .card')).length === 2, 'two runs side by side');

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
