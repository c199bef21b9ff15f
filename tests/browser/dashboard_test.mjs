// The dashboard in Debian's headless Chromium, driven by puppeteer-core. Started by
// tests/integration/test_dashboard.py, which runs ralphd on TCP and gives this script:
//   RALPH_DASHBOARD   http://127.0.0.1:PORT        RALPH_TOKEN      the login token
//   RALPH_CHROMIUM    the browser                  RALPHCTL, RALPH_SOCKET  the client
//   RALPH_WORKSPACES  five clean git workspaces    RALPH_ARTIFACTS  where screenshots go
//   RALPH_TEST_TIMEOUT_SCALE  stretches every wait (sanitizers)
// Each step prints its name; the first failure saves failure.png and exits 1.
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import puppeteer from 'puppeteer-core';

const base = process.env.RALPH_DASHBOARD;
const token = process.env.RALPH_TOKEN;
const artifacts = process.env.RALPH_ARTIFACTS;
const [liveWs, cancelWs, claudeWs, formWs, waitWs] = process.env.RALPH_WORKSPACES.split(',');
const scale = Number(process.env.RALPH_TEST_TIMEOUT_SCALE || '1');
const timeout = 15000 * scale;

function ralphctl(...args) {
  return execFileSync(process.env.RALPHCTL, args, {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']});
}

function submit(...args) {
  return JSON.parse(ralphctl('--json', 'submit', ...args)).loop.id;
}

// A call of the API from here (not the page), with the token.
async function rpc(method, params) {
  const res = await fetch(base + '/rpc', {
    method: 'POST',
    headers: {'Content-Type': 'application/json', Authorization: 'Bearer ' + token},
    body: JSON.stringify({jsonrpc: '2.0', id: 1, method, params}),
  });
  const reply = await res.json();
  assert.ok(!reply.error, `${method}: ${JSON.stringify(reply.error)}`);
  return reply.result;
}

async function waitForState(id, state) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const loop = await rpc('loop.get', {id});
    if (loop.state === state) return loop;
    assert.ok(Date.now() < deadline, `loop ${id} is ${loop.state}, not ${state}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function processGroupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    assert.equal(error.code, 'ESRCH');
    return false;
  }
}

const profile = mkdtempSync(join(tmpdir(), 'ralph-chromium-'));
const browser = await puppeteer.launch({
  executablePath: process.env.RALPH_CHROMIUM,
  headless: true,
  userDataDir: profile,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-dev-shm-usage'],
});
const page = await browser.newPage();
const problems = [];
page.on('console', (message) => {
  if (message.type() === 'error' || message.type() === 'warn') problems.push(`console ${message.type()}: ${message.text()}`);
});
page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`));
page.setDefaultTimeout(timeout);
await page.setViewport({width: 1280, height: 900});

let step = '';
async function check(name, body) {
  step = name;
  console.log('--', name);
  await body();
}

// Clicks the element once it is there (views draw after their first reads; a live change may
// draw it again between the wait and the click: then the new one is clicked).
async function click(selector) {
  for (let tries = 0; ; ++tries) {
    try {
      await (await page.waitForSelector(selector)).click();
      return;
    } catch (error) {
      if (tries === 3 || !/detached/.test(error.message)) throw error;
    }
  }
}

async function shot(name) {
  await page.screenshot({path: join(artifacts, name), fullPage: true});
}

try {
  await check('without the token, nothing but a 401', async () => {
    const res = await page.goto(base + '/');
    assert.equal(res.status(), 401);
    const plain = await fetch(base + '/');  // the browser shows a page of its own instead
    assert.equal(plain.status, 401);
    assert.equal(await plain.text(), '');
    problems.length = 0;  // the 401 itself is reported by the console
  });

  await check('the login link leaves no token in the URL', async () => {
    await page.goto(`${base}/login?token=${token}`);
    assert.equal(page.url(), base + '/');
    await page.waitForSelector('#loops');
    const cookies = await page.cookies();
    const cookie = cookies.find((c) => c.name === 'ralph_token');
    assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Strict', JSON.stringify(cookies));
    assert.equal(await page.evaluate(() => document.cookie), '');  // HttpOnly: not for scripts
  });

  let liveId;
  await check('a loop submitted by ralphctl appears without a reload and changes state live', async () => {
    await page.evaluate(() => { window.notReloaded = true; });
    // Hostile text in the name and the output: shown as text, never run (the raw view's
    // byte-exact check below fails too if markup were parsed).
    liveId = submit('--workspace', liveWs, '--name', '<img src=x onerror=window.pwned=1>', '--max-iterations', '1',
      '--command', '/bin/sh -c \'echo "<img src=x onerror=window.pwned=1><script>window.pwned=1</script>"; for i in 1 2 3 4 5 6; do echo "line $i: ✓ naïve ünïcödé"; sleep 0.4; done; echo "<promise>COMPLETE</promise>"\'');
    await page.waitForSelector(`#loops tr[data-id="${liveId}"]`);
    await page.waitForSelector(`#loops tr[data-id="${liveId}"][data-state="running"]`);
    assert.equal(await page.evaluate(() => window.notReloaded), true);
  });

  await check('the loop page shows the output arriving', async () => {
    await click(`#loops tr[data-id="${liveId}"] td a`);
    await page.waitForSelector('#output-rendered');
    await page.waitForFunction(() => document.querySelector('#output-rendered')?.textContent.includes('line 1:'));
    const early = await page.$eval('#output-rendered', (pre) => pre.textContent);
    assert.ok(!early.includes('line 6:'), 'the output came all at once: ' + early);
    await page.waitForFunction(() => document.querySelector('#output-rendered')?.textContent.includes('line 6:'));
    await page.waitForSelector('#output[data-final="true"]');
    await page.waitForFunction(() => document.querySelector('h1 .state')?.textContent === 'completed');
    assert.equal(await page.evaluate(() => document.querySelectorAll('main img, main script').length), 0);
    assert.equal(await page.evaluate(() => window.pwned), undefined);
    assert.ok((await page.$eval('h1', (h) => h.textContent)).includes('<img src=x onerror=window.pwned=1>'));
  });

  await check('the raw view is byte-exact', async () => {
    await click('button[data-view="raw"]');
    assert.equal(await page.$eval('#output-rendered', (pre) => pre.hidden), true);
    const shown = await page.$eval('#output-raw', (pre) => pre.textContent);
    const stored = await rpc('loop.output', {id: liveId, encoding: 'base64', max_bytes: 4194304});
    assert.equal(shown, Buffer.from(stored.data, 'base64').toString('utf8'));
    assert.equal(Number(await page.$eval('#output', (s) => s.dataset.offset)), stored.end_offset);
  });

  let claudeId;
  await check('a structured stream is rendered, its raw view is the JSON; the attempts and a diff', async () => {
    claudeId = submit('--workspace', claudeWs, '--name', 'claude-replay', '--agent', 'claude',
      '--delay', '0', '--env', 'FAKE_AGENT_SCRIPT=ralph-iter1,ralph-iter2', '--env', 'FAKE_WRITES=notes.txt');
    await waitForState(claudeId, 'completed');
    await page.goto(`${base}/#/loop/${claudeId}`);
    await page.waitForSelector('#output[data-final="true"]');
    const rendered = await page.$eval('#output-rendered', (pre) => pre.textContent);
    assert.ok(rendered.includes('●'), 'no tool call rendered: ' + rendered.slice(0, 500));
    assert.ok(!rendered.includes('"type":'), 'JSON in the rendered view: ' + rendered.slice(0, 500));
    // A line marks where each iteration begins, in the rendered view only.
    assert.ok(rendered.includes('── iteration 1 ──\n') && rendered.indexOf('── iteration 2 ──\n') > rendered.indexOf('── iteration 1 ──'),
      'no iteration lines: ' + rendered.slice(0, 500));
    const raw = await page.$eval('#output-raw', (pre) => pre.textContent);
    assert.ok(raw.includes('"type":"assistant"'), raw.slice(0, 300));
    assert.ok(!raw.includes('── iteration'), 'the raw view is the bytes');
    await page.waitForFunction(() => document.querySelectorAll('#attempts tbody tr').length === 2);
    const limits = await page.$eval('#limits', (dl) => dl.textContent);
    assert.match(limits, /iterations2\/30 \(at least 1\)/);
    assert.match(limits, /tokens400 in, 80 out/);
    assert.match(await page.$eval('#stop-reason', (p) => p.textContent), /completion signal .* in iteration 2/);
    const attempts = (await rpc('loop.iterations', {id: claudeId})).attempts;
    await click(`button[data-diff="${attempts[1].id}"]`);
    await page.waitForSelector('#diff pre.diff');
    const diff = await page.$eval('#diff pre.diff', (pre) => pre.textContent);
    assert.ok(diff.includes('+run 2') && !diff.includes('+run 1'), diff);
    assert.equal(await page.$$eval('#diff pre.diff span.add', (lines) => lines.length) > 0, true);
    await shot('loop-desktop.png');
  });

  await check('a waiting loop says why and until when, on the loops page and on its own', async () => {
    const id = submit('--workspace', waitWs, '--name', 'budgeted', '--iterations-per-hour', '1', '-m', '3',
      '--delay', '0', '--command', '/bin/echo one step');
    await waitForState(id, 'waiting');
    const why = new RegExp(`^until .+ \\(in (59 min|60 min|1 h 00 min)\\): waiting for the loop ${id}'s budget iterations per hour used up \\(1 of 1\\)$`);
    await page.goto(`${base}/#/`);
    await page.waitForSelector(`#loops tr[data-id="${id}"][data-state="waiting"]`);
    assert.match(await page.$eval(`#loops tr[data-id="${id}"] .why`, (e) => e.textContent), why);
    await page.goto(`${base}/#/loop/${id}`);
    await page.waitForFunction(() => document.querySelector('#stop-reason')?.textContent.startsWith('Waits until'));
    assert.match((await page.$eval('#stop-reason', (p) => p.textContent)).replace(/^Waits /, ''), why);
  });

  await check('pause, resume, steer; cancel from the page ends the agent\'s process group', async () => {
    const id = submit('--workspace', cancelWs, '--name', 'to-cancel',
      '--command', '/bin/sh -c \'sleep 300 & echo started; wait\'');
    await waitForState(id, 'running');
    // Pause and resume from the loops page, then steer and cancel from the loop's.
    await page.goto(`${base}/#/`);
    await click(`#loops tr[data-id="${id}"] button[data-action="loop.pause"]`);
    await page.waitForSelector(`#loops tr[data-id="${id}"][data-state="paused"]`);
    await click(`#loops tr[data-id="${id}"] button[data-action="loop.resume"]`);
    await page.waitForSelector(`#loops tr[data-id="${id}"][data-state="running"]`);
    await click(`#loops tr[data-id="${id}"] a[data-action="steer"]`);
    await page.waitForSelector('#steer textarea:focus');
    await page.type('#steer textarea', 'Look at the failing test first.');
    await click('#steer button[type="submit"]');
    await page.waitForFunction(() => document.querySelector('#message')?.textContent.includes('goes into iteration'));
    await page.waitForFunction(() => (document.querySelector('#output-rendered')?.textContent.match(/started/g) || []).length === 2);
    const attempts = (await rpc('loop.iterations', {id})).attempts;
    assert.deepEqual(attempts.map((a) => a.termination), ['interrupted', 'running']);
    const pid = attempts[1].pid;
    assert.ok(pid > 0 && processGroupAlive(pid), `agent ${pid} of loop ${id} is not running`);
    await click('button[data-action="loop.cancel"]');
    await page.waitForFunction(() => document.querySelector('h1 .state')?.textContent === 'cancelled');
    const deadline = Date.now() + timeout;
    while (processGroupAlive(pid)) {
      assert.ok(Date.now() < deadline, `process group ${pid} still alive after the cancel`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  await check('the submit form gives the API\'s errors and queues a loop', async () => {
    await page.goto(`${base}/#/`);
    await page.waitForSelector('#loops');
    await click('#submit-loop summary');
    await page.type('#submit input[name="workspace"]', '/no/such/dir');
    await page.type('#submit input[name="command"]', '/bin/true');
    await click('#submit button[type="submit"]');
    await page.waitForSelector('#message .error');
    assert.match(await page.$eval('#message .error', (p) => p.textContent), /^error -32003: .*\/no\/such\/dir/);
    await page.$eval('#submit input[name="workspace"]', (input) => { input.value = ''; });
    await page.type('#submit input[name="workspace"]', formWs);
    await page.$eval('#submit input[name="command"]', (input) => { input.value = ''; });
    await page.type('#submit input[name="command"]', '/bin/echo "<promise>COMPLETE</promise>"');
    await click('#submit button[type="submit"]');
    await page.waitForSelector('#message a');
    const id = Number((await page.$eval('#message a', (a) => a.getAttribute('href'))).split('/').pop());
    await page.waitForSelector(`#loops tr[data-id="${id}"][data-state="completed"]`);
    await click('#submit-loop summary');
    await shot('loops-desktop.png');
  });

  await check('the report draws its charts from history.report and budget.get', async () => {
    ralphctl('budget', 'set', '--iterations-per-hour', '20', '--cost-per-day', '5');
    await page.goto(`${base}/#/report`);
    await page.waitForSelector('#chart-budget');
    const charts = await page.evaluate(() => Object.fromEntries(
      ['chart-usage', 'chart-cost', 'chart-timeline', 'chart-budget'].map((id) => {
        const chart = Chart.getChart(id);
        return [id, {labels: chart.data.labels, datasets: chart.data.datasets.map((d) => ({label: d.label, data: d.data}))}];
      })));
    const report = await rpc('history.report', {since: new Date(Date.now() - 12 * 3600e3).toISOString()});
    assert.deepEqual(charts['chart-usage'].labels, report.loops.map((l) => `#${l.id} ${l.name}`));
    const usage = Object.fromEntries(charts['chart-usage'].datasets.map((d) => [d.label, d.data]));
    assert.deepEqual(usage['input tokens'], report.loops.map((l) => l.input_tokens));
    assert.deepEqual(usage['output tokens'], report.loops.map((l) => l.output_tokens));
    assert.deepEqual(usage['cost (USD)'], report.loops.map((l) => l.cost_usd ?? 0));
    const claude = report.loops.find((l) => l.id === claudeId);
    assert.ok(claude.output_tokens > 0 && claude.cost_usd > 0, JSON.stringify(claude));
    const cost = charts['chart-cost'].datasets.find((d) => d.label === 'cost (USD)').data;
    assert.ok(Math.abs(cost[cost.length - 1].y - report.totals.cost_usd) < 1e-6, JSON.stringify(cost));
    const bars = charts['chart-timeline'].datasets.flatMap((d) => d.data);
    assert.equal(bars.length, report.totals.attempts);
    const cancelled = charts['chart-timeline'].datasets.find((d) => d.label === 'cancelled');
    assert.equal(cancelled.data.length, 1);
    const budget = await rpc('budget.get', {});
    assert.deepEqual(charts['chart-budget'].labels, ['iterations per hour', 'cost per day usd']);
    assert.deepEqual(charts['chart-budget'].datasets[0].data, budget.use.map((u) => (100 * u.used) / u.limit));
    assert.equal(budget.use[0].used, report.totals.attempts);
    await shot('report-desktop.png');
  });

  await check('a 390 px wide phone shows every page without sideways scrolling', async () => {
    await page.setViewport({width: 390, height: 844, deviceScaleFactor: 2, isMobile: true, hasTouch: true});
    for (const [hash, selector, name] of [['#/', '#loops', 'loops-phone.png'],
                                          ['#/report', '#chart-budget', 'report-phone.png'],
                                          [`#/loop/${claudeId}`, '#output[data-final="true"]', null]]) {
      await page.goto(`${base}/${hash}`);
      await page.waitForSelector(selector);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      const wide = await page.evaluate(() => [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > 392 && !e.closest('.scroll')).slice(0, 8)
        .map((e) => `${e.tagName}#${e.id}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`));
      assert.ok(width <= 390, `${hash} is ${width} px wide: ${wide.join(', ')}`);
      if (name) await shot(name);
    }
  });

  await check('no console error, no failed request', async () => {
    assert.deepEqual(problems, []);
  });
} catch (error) {
  console.log(`FAILED at "${step}":`, error);
  await page.screenshot({path: join(artifacts, 'failure.png'), fullPage: true}).catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
  rmSync(profile, {recursive: true, force: true});
}
