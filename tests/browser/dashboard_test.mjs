// The dashboard in Debian's headless Chromium, driven by puppeteer-core. Started by
// tests/integration/test_dashboard.py, which runs ralphd on TCP and gives this script:
//   RALPH_DASHBOARD   http://127.0.0.1:PORT        RALPH_TOKEN      the login token
//   RALPH_CHROMIUM    the browser                  RALPHCTL, RALPH_SOCKET  the client
//   RALPH_WORKSPACES  six clean git workspaces     RALPH_ARTIFACTS  where screenshots go
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
const [liveWs, cancelWs, claudeWs, formWs, waitWs, limitWs] = process.env.RALPH_WORKSPACES.split(',');
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
    // A running loop's page: its output first, above its facts, with its attempt's time ticking.
    assert.ok(await page.$eval('#output', (o) => o.compareDocumentPosition(document.querySelector('#limits')) & Node.DOCUMENT_POSITION_FOLLOWING));
    await page.waitForFunction(() => /^Iteration 2 · running for \d+s$/.test(document.querySelector('#attempt-timer')?.textContent));
    const timerAt = await page.$eval('#attempt-timer', (p) => p.textContent);
    await page.waitForFunction((before) => document.querySelector('#attempt-timer').textContent !== before, {}, timerAt);
    // Cancel asks first: "No, keep it" keeps it running; "Yes, cancel" cancels it.
    await click('#actions button[data-action="loop.cancel"]');
    await page.waitForSelector('#actions button[data-action="confirm-cancel"]');
    await click('#actions button[data-action="keep"]');
    await page.waitForSelector('#actions button[data-action="loop.cancel"]');
    assert.equal((await rpc('loop.get', {id})).state, 'running');
    await click('#actions button[data-action="loop.cancel"]');
    await click('#actions button[data-action="confirm-cancel"]');
    await page.waitForFunction(() => document.querySelector('h1 .state')?.textContent === 'cancelled');
    const deadline = Date.now() + timeout;
    while (processGroupAlive(pid)) {
      assert.ok(Date.now() < deadline, `process group ${pid} still alive after the cancel`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // A cancelled loop's page offers Retry (loop.retry), which queues it again, its iterations
    // kept; cancelled again here.
    const iterations = (await rpc('loop.get', {id})).iterations;
    await click('#actions button[data-action="loop.retry"]');
    await page.waitForFunction(() => document.querySelector('h1 .state')?.textContent !== 'cancelled');
    const retried = await rpc('loop.get', {id});
    assert.ok(['queued', 'running', 'waiting'].includes(retried.state), retried.state);
    assert.equal(retried.iterations, iterations);
    // Cancelled again once its agent runs: the report's timeline has two cancelled attempts.
    for (const deadline = Date.now() + timeout; ;) {
      const attempts = (await rpc('loop.iterations', {id})).attempts;
      if (attempts.length === 3 && attempts[2].termination === 'running') break;
      assert.ok(Date.now() < deadline, `no attempt after the retry: ${JSON.stringify(attempts)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await rpc('loop.cancel', {id});
    await waitForState(id, 'cancelled');
  });

  await check('the submit form gives the API\'s errors and queues a loop', async () => {
    await page.goto(`${base}/#/`);
    await page.waitForSelector('#loops');
    await click('#submit-loop summary');
    // The agent offered is the first agent CLI ralphd finds (the replay agents: claude).
    await page.waitForFunction(() => document.querySelector('#submit select[name="agent"]').value === 'claude');
    await page.select('#submit select[name="agent"]', 'command');
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
  });

  let runningId;
  await check('the report: problems first, every row of the timeline named, usage limits in a colour of their own, no empty chart', async () => {
    // A loop that fails, and one that hits claude's usage limit and waits an hour for its reset.
    const failedId = submit('--workspace', formWs, '--name', 'fails', '--retries', '0', '--command', '/bin/false');
    await waitForState(failedId, 'failed');
    const limitedId = submit('--workspace', limitWs, '--name', 'limited', '--agent', 'claude', '--retries', '0',
      '--env', 'FAKE_AGENT_SCRIPT=rate-limit', '--env', `FAKE_RESETS_AT=${Math.floor(Date.now() / 1000) + 3600}`);
    await waitForState(limitedId, 'waiting');
    // No budget set: no Budgets chart, a line that says so.
    await page.goto(`${base}/#/report`);
    await page.waitForSelector('#no-budget');
    assert.equal(await page.$('#chart-budget'), null);

    ralphctl('budget', 'set', '--iterations-per-hour', '20', '--cost-per-day', '5');
    await page.goto(`${base}/#/`);
    await page.goto(`${base}/#/report`);
    await page.waitForSelector('#chart-budget');
    const states = await page.$$eval('#report-loops tbody tr', (rows) => rows.map((r) => r.dataset.state));
    const ranks = states.map((state) => ['failed', 'stalled', 'waiting'].indexOf(state)).map((r) => (r < 0 ? 3 : r));
    assert.deepEqual(ranks, [...ranks].sort(), 'problems first: ' + states.join(' '));
    assert.equal(states[0], 'failed');
    assert.match(await page.$eval('#problems', (p) => p.textContent), /Needs a look: 1 failed, 2 waiting/);
    const ids = await page.$$eval('#report-loops tbody tr', (rows) => rows.map((r) => Number(r.dataset.id)));
    const charts = await page.evaluate(() => Object.fromEntries(
      ['chart-usage', 'chart-cost', 'chart-timeline', 'chart-budget'].map((id) => {
        const chart = Chart.getChart(id);
        return [id, {labels: chart.data.labels,
                     datasets: chart.data.datasets.map((d) => ({label: d.label, data: d.data, colour: d.backgroundColor})),
                     ticks: chart.scales.y.ticks.map((t) => t.label)}];
      })));
    const report = await rpc('history.report', {since: new Date(Date.now() - 12 * 3600e3).toISOString()});
    const byId = new Map(report.loops.map((l) => [l.id, l]));
    const inOrder = ids.map((id) => byId.get(id));
    const named = (l) => (`#${l.id} ${l.name}`.length > 24 ? `#${l.id} ${l.name}`.slice(0, 23) + '…' : `#${l.id} ${l.name}`);
    assert.deepEqual(charts['chart-usage'].labels, inOrder.map(named));
    const usage = Object.fromEntries(charts['chart-usage'].datasets.map((d) => [d.label, d.data]));
    assert.deepEqual(usage['input tokens'], inOrder.map((l) => l.input_tokens));
    assert.deepEqual(usage['output tokens'], inOrder.map((l) => l.output_tokens));
    assert.deepEqual(usage['cost (USD)'], inOrder.map((l) => l.cost_usd ?? 0));
    const claude = report.loops.find((l) => l.id === claudeId);
    assert.ok(claude.output_tokens > 0 && claude.cost_usd > 0, JSON.stringify(claude));
    const cost = charts['chart-cost'].datasets.find((d) => d.label === 'cost (USD)').data;
    assert.ok(Math.abs(cost[cost.length - 1].y - report.totals.cost_usd) < 1e-6, JSON.stringify(cost));
    const timeline = charts['chart-timeline'];
    assert.equal(timeline.datasets.flatMap((d) => d.data).length, report.totals.attempts);
    assert.deepEqual(timeline.ticks, timeline.labels, 'every row of the timeline is named');
    assert.equal(timeline.datasets.find((d) => d.label === 'cancelled').data.length, 2);
    const limited = timeline.datasets.find((d) => d.label === 'usage limit');
    assert.ok(limited && limited.data.length === 1 && limited.data[0].y.startsWith(`#${limitedId} `),
      JSON.stringify(timeline.datasets));
    const others = timeline.datasets.filter((d) => d !== limited).map((d) => d.colour);
    assert.ok(!others.includes(limited.colour), `the usage limit's ${limited.colour} is another's: ${others}`);
    const budget = await rpc('budget.get', {});
    assert.deepEqual(charts['chart-budget'].labels, ['iterations per hour', 'cost per day usd']);
    assert.deepEqual(charts['chart-budget'].datasets[0].data, budget.use.map((u) => (100 * u.used) / u.limit));
    assert.equal(budget.use[0].used, report.totals.attempts);
  });

  // Every element inside the window, and no word of the page's text split across two lines (a
  // column narrower than its words), checked in the page.
  async function checkLayout(what) {
    const found = await page.evaluate(() => {
      const width = document.documentElement.clientWidth;
      const name = (e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className} ${e.textContent.slice(0, 40)}`;
      const outside = [...document.querySelectorAll('body *')].filter((e) => {
        if (e.tagName !== 'PRE' && e.closest('pre') !== null) return false;  // output and diffs scroll in their box
        const r = e.getBoundingClientRect();
        return (r.width > 0 || r.height > 0) && (r.right > width + 1 || r.left < -1);
      }).slice(0, 6).map((e) => `${name(e)} (${Math.round(e.getBoundingClientRect().right)} px)`);
      const split = [];
      const texts = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
      for (let node; (node = texts.nextNode());) {
        const parent = node.parentElement;
        if (parent.closest('pre, .path, select, [hidden]') || parent.getClientRects().length === 0) continue;
        for (const word of node.data.matchAll(/[\p{L}\p{N}]+/gu)) {
          if (word[0].length < 3 || word[0].length > 24) continue;
          const range = document.createRange();
          range.setStart(node, word.index);
          range.setEnd(node, word.index + word[0].length);
          const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
          if (tops.size > 1) split.push(`"${word[0]}" in ${name(parent)}`);
        }
      }
      return {scroll: document.documentElement.scrollWidth, width, outside, split: split.slice(0, 6)};
    });
    assert.ok(found.scroll <= found.width, `${what} is ${found.scroll} px wide in ${found.width}`);
    assert.deepEqual(found.outside, [], `${what}: outside the window`);
    assert.deepEqual(found.split, [], `${what}: words split across lines`);
  }

  for (const [width, height, device] of [[1280, 900, 'desktop'], [390, 844, 'phone']]) {
    await check(`every page at ${width} px: nothing outside the window, no word split, the actions in sight`, async () => {
      await page.setViewport({width, height, deviceScaleFactor: device === 'phone' ? 2 : 1,
                              isMobile: device === 'phone', hasTouch: device === 'phone'});
      runningId = runningId ?? submit('--workspace', liveWs, '--name', 'runs-while-you-look',
        '--command', '/bin/sh -c \'for i in 1 2 3; do echo "step $i of a long job"; done; sleep 300\'');
      await waitForState(runningId, 'running');
      for (const [hash, selector, name] of [['#/', '#loops', 'loops'],
                                            [`#/loop/${claudeId}`, '#output[data-final="true"]', 'loop'],
                                            [`#/loop/${runningId}`, '#attempt-timer:not([hidden])', 'running'],
                                            ['#/report', '#chart-budget', 'report']]) {
        await page.goto(`${base}/${hash}`);
        await page.waitForSelector(selector);
        await new Promise((resolve) => setTimeout(resolve, 300));  // the charts and the attempts drawn
        await checkLayout(`${hash} at ${width} px`);
        await shot(`${name}-${device}.png`);
      }
      // On a running loop's page, scrolled to its end, Pause and Cancel are still in sight.
      await page.goto(`${base}/#/loop/${runningId}`);
      await page.waitForSelector('#attempt-timer:not([hidden])');
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const action of ['loop.pause', 'loop.cancel']) {
        const box = await page.$eval(`#actions button[data-action="${action}"]`, (b) => b.getBoundingClientRect().toJSON());
        assert.ok(box.top >= 0 && box.bottom <= height, `${action} is off-screen at ${width} px: ${JSON.stringify(box)}`);
      }
    });
  }

  await check('no console error, no failed request', async () => {
    assert.deepEqual(problems, []);
  });

  await check('when ralphd stops, the page keeps what it showed and says since when it is not live', async () => {
    await page.goto(`${base}/#/`);
    await page.waitForSelector(`#loops tr[data-id="${runningId}"]`);
    const rows = await page.$$eval('#loops tbody tr', (trs) => trs.length);
    await rpc('daemon.shutdown', {});
    await page.waitForSelector('#offline:not([hidden])');
    assert.match(await page.$eval('#offline', (p) => p.textContent), /ralphd does not answer since .*: this page shows what it last knew/);
    await new Promise((resolve) => setTimeout(resolve, 2500 * scale));  // a try to draw the view again
    assert.equal(await page.$$eval('#loops tbody tr', (trs) => trs.length), rows, 'the rows are still there');
    assert.equal(await page.$('main .error'), null);
  });
} catch (error) {
  console.log(`FAILED at "${step}":`, error);
  await page.screenshot({path: join(artifacts, 'failure.png'), fullPage: true}).catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
  rmSync(profile, {recursive: true, force: true});
}
