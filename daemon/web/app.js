// ralph's dashboard: one page with three views, chosen by the URL's fragment: the loops (#/),
// one loop (#/loop/ID) and the morning report (#/report). Everything comes from ralphd's
// JSON-RPC API (proto/API.md): calls are POST /rpc; live changes come over a WebSocket on /rpc
// (events.subscribe, loop.tail), never by polling. The DOM is built with el(); text is always
// set as text, never parsed as HTML. Charts are Debian's Chart.js.
'use strict';

const endedStates = ['completed', 'exhausted', 'failed', 'stalled', 'cancelled'];
const liveStates = ['queued', 'running', 'waiting', 'paused'];
// The agent CLIs a loop runs on when none is chosen, the first found (as ralphctl submit).
const preferredAgents = ['claude', 'codex', 'gemini', 'opencode', 'aider', 'kiro'];
// A loop page shows the last lines of an output longer than this, not all of it.
const maxShownBytes = 8 << 20;

// ---- the DOM

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (name === 'className') node.className = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// A table of rows that become cards on a narrow screen (app.css: every cell a labelled item of
// its card, none narrower than its words). `columns`: [label, className] pairs.
function cardTable(id, columns, body) {
  return el('div', {className: 'scroll'}, el('table', {id, className: 'cards'},
    el('thead', {}, el('tr', {}, columns.map(([label, className]) => el('th', {className}, label)))),
    body));
}

// A cell of a card table: `label` names it in the card (none for its title cells).
function cell(label, className, ...children) {
  return el('td', {className, 'data-label': label || null}, ...children);
}

function stateBadge(loop) {
  return el('span', {className: 'state ' + loop.state, title: loop.stop_reason || null}, loop.state);
}

// ---- numbers and times

const parseTime = (text) => (text ? Date.parse(text) : null);

function fmtTokens(n) {
  if (!n) return '0';
  if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M';
  if (n >= 1e3) return (n / 1e3).toFixed(1) + 'k';
  return String(n);
}

function fmtCost(usd) {
  return usd === null || usd === undefined ? '—' : '$' + usd.toFixed(usd < 1 ? 3 : 2);
}

function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || seconds < 0) return '—';
  const s = Math.round(seconds);
  const pad = (n) => String(n).padStart(2, '0');
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  return `${s}s`;
}

function fmtClock(ms) {
  const d = new Date(ms);
  return d.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
}

function fmtSeconds(ms) {
  return new Date(ms).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit', second: '2-digit'});
}

function fmtTime(text) {
  return text ? new Date(parseTime(text)).toLocaleString() : '—';
}

function elapsed(loop, now) {
  const start = parseTime(loop.started_at);
  if (start === null) return null;
  const end = parseTime(loop.finished_at) ?? now;
  return (end - start) / 1000;
}

// When `ms` is, in local time: "14:05 (in 42 min)", "Sat 09:00 (in 2 days)"; "now" once passed.
function fmtUntil(ms, now) {
  if (ms <= now) return 'now';
  const when = new Date(ms);
  const today = new Date(now);
  const left = Math.ceil((ms - now) / 1000);
  const clock = when.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
  const day = when.toDateString() === today.toDateString() ? ''
    : left < 6 * 86400 ? when.toLocaleDateString([], {weekday: 'short'}) + ' '
      : when.toLocaleDateString() + ' ';
  const inText = left < 60 ? `${left} s`
    : left < 3600 ? `${Math.ceil(left / 60)} min`
      : left < 48 * 3600 ? `${Math.floor(left / 3600)} h ${String(Math.floor((left % 3600) / 60)).padStart(2, '0')} min`
        : `${Math.floor(left / 86400)} days`;
  return `${day}${clock} (in ${inText})`;
}

// Why a loop does not run now, and until when, time first (as ralphctl's describe_wait): a
// waiting loop's stop reason and resume time; a queued loop's stop reason, else the scheduler
// paused, a loop running in its workspace, no free slot. '' for any other loop.
function describeWait(loop, scheduler, loops, now) {
  if (loop.state === 'waiting') {
    const at = parseTime(loop.resume_at);
    if (at === null) return loop.stop_reason;
    return `until ${fmtUntil(at, now)}` + (loop.stop_reason ? `: ${loop.stop_reason}` : '');
  }
  if (loop.state !== 'queued') return '';
  if (loop.stop_reason || !scheduler) return loop.stop_reason;
  if (scheduler.paused) return 'the scheduler is paused (ralphctl scheduler resume)';
  const busy = loops.find((other) => other.state === 'running' && other.id !== loop.id &&
                                     other.workspace === loop.workspace);
  if (busy) return `waiting for loop ${busy.id}, which runs in the same workspace`;
  if (scheduler.running >= scheduler.max_concurrent)
    return `waiting for a free slot (${scheduler.running} of ${scheduler.max_concurrent} running)`;
  return '';
}

function iterationText(loop) {
  return `${loop.iterations}/${loop.max_iterations > 0 ? loop.max_iterations : '∞'}`;
}

// ---- the API

class RpcError extends Error {
  constructor(error) {
    super(`error ${error.code}: ${error.message}`);
    this.code = error.code;
    this.data = error.data;
  }
}

// ralphd cannot be reached (it restarts, the tunnel dropped): the view is drawn again later.
class ConnectionLost extends Error {}

let nextCallId = 1;

async function call(method, params) {
  let res;
  try {
    res = await fetch('/rpc', {
      method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({jsonrpc: '2.0', id: nextCallId++, method, params: params || {}}),
      credentials: 'same-origin',
    });
  } catch (error) {
    throw new ConnectionLost(`ralphd does not answer (${error.message})`);
  }
  if (res.status === 401) throw new Error('not logged in: open the URL `ralphctl web` prints');
  const reply = await res.json();
  if (reply.error) throw new RpcError(reply.error);
  return reply.result;
}

// One WebSocket JSON-RPC session: calls answered by id, notifications to `onNotification`.
// `onLost` runs when the connection ends unless close() ended it.
class Session {
  constructor(onNotification, onLost) {
    const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
    this.ws = new WebSocket(scheme + location.host + '/rpc');
    this.pending = new Map();
    this.closing = false;
    this.opened = new Promise((resolve, reject) => {
      this.ws.addEventListener('open', () => resolve());
      this.ws.addEventListener('error', () => reject(new ConnectionLost('no WebSocket to ralphd')));
    });
    this.ws.addEventListener('message', (event) => {
      const message = JSON.parse(event.data);
      if (message.id !== undefined && this.pending.has(message.id)) {
        const {resolve, reject} = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.error) reject(new RpcError(message.error));
        else resolve(message.result);
      } else if (message.method) {
        onNotification(message.method, message.params);
      }
    });
    this.ws.addEventListener('close', () => {
      for (const {reject} of this.pending.values()) reject(new ConnectionLost('connection to ralphd lost'));
      this.pending.clear();
      if (!this.closing) onLost();
    });
  }

  async call(method, params) {
    await this.opened;
    const id = nextCallId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, {resolve, reject});
      this.ws.send(JSON.stringify({jsonrpc: '2.0', id, method, params: params || {}}));
    });
  }

  close() {
    this.closing = true;
    this.ws.close();
  }
}

// ---- views
// A view draws itself into <main> and returns what to undo when another one replaces it.

const main = document.getElementById('main');
const connection = document.getElementById('connection');
let current = null;  // {leave()} of the view shown
let reconnect = null;
let shownHash = null;   // the address of the view on the page
let routing = false;    // a view is being drawn
let rerouting = false;  // the address changed meanwhile: draw again once it is done

const offline = document.getElementById('offline');

// Live, or not: then the page keeps what it shows, and says since when it is not live.
function setLive(live) {
  connection.className = 'connection ' + (live ? 'live' : 'down');
  connection.title = live ? 'live updates' : 'connection to ralphd lost: retrying';
  if (live) {
    offline.hidden = true;
  } else if (offline.hidden) {
    offline.textContent = `ralphd does not answer since ${fmtSeconds(Date.now())}: ` +
      'this page shows what it last knew; trying again…';
    offline.hidden = false;
  }
}

// The live connection ended: show it, and draw the view afresh a little later.
function connectionLost() {
  setLive(false);
  clearTimeout(reconnect);
  reconnect = setTimeout(route, 2000);
}

function showError(where, error) {
  where.replaceChildren(el('p', {className: 'error'}, error.message));
}

// Draws the view of the address. One at a time: a change of address while a view reads its
// data is drawn once that view is done, so no view ever draws over a newer one.
async function route() {
  if (routing) {
    rerouting = true;
    return;
  }
  routing = true;
  clearTimeout(reconnect);
  if (current) current.leave();
  current = null;
  const hash = location.hash || '#/';
  for (const link of document.querySelectorAll('nav a'))
    link.classList.toggle('current', link.getAttribute('href') === (hash.startsWith('#/loop/') ? '#/' : hash));
  // The same view drawn again (ralphd came back, or not yet): what it showed stays until the new
  // data is in.
  const again = hash === shownHash;
  if (!again) main.replaceChildren(el('p', {className: 'muted'}, 'Loading…'));
  shownHash = hash;
  const loop = /^#\/loop\/(\d+)(\?steer)?$/.exec(hash);
  try {
    if (loop) current = await loopView(Number(loop[1]));
    else if (hash.startsWith('#/report')) current = await reportView();
    else current = await loopsView();
  } catch (error) {
    if (!(again && error instanceof ConnectionLost)) showError(main, error);
    if (error instanceof ConnectionLost) connectionLost();
  }
  routing = false;
  if (rerouting) {
    rerouting = false;
    route();
  }
}

// The loops whose Cancel asks "are you sure?" now (a view drawn again asks it still).
const confirmingCancel = new Set();

// The end states a loop runs again from with Retry (loop.retry); an exhausted one is extended.
const retriedStates = ['failed', 'stalled', 'cancelled'];

// Buttons for what may be done to a loop in its state; errors go to `message`. Cancel asks
// first: it ends the agent, and cannot be undone. An ended loop's page offers Retry, or Extend
// by a number of iterations; the table of loops does not.
function loopActions(loop, message) {
  const group = el('span', {className: 'loop-actions'});
  const act = (method, label, className, attrs, params = () => ({id: loop.id})) =>
    el('button', {
      className,
      'data-action': method,
      ...attrs,
      onclick: async (event) => {
        event.preventDefault();
        message.replaceChildren();
        confirmingCancel.delete(loop.id);
        try {
          await call(method, params());
        } catch (error) {
          showError(message, error);
        }
        draw();
      },
    }, label);
  function drawEnded() {
    if (!location.hash.startsWith('#/loop/')) return group.replaceChildren();
    if (retriedStates.includes(loop.state))
      return group.replaceChildren(act('loop.retry', 'Retry'));
    if (loop.state !== 'exhausted') return group.replaceChildren();
    const by = el('input', {type: 'number', min: '1', value: '10', 'data-field': 'extend-by',
                            'aria-label': 'more iterations', className: 'extend-by'});
    group.replaceChildren(
      act('loop.extend', 'Extend by', '', {}, () => ({id: loop.id, by: Number(by.value)})), by,
      el('span', {}, ' iterations'));
  }
  function draw() {
    if (endedStates.includes(loop.state)) return drawEnded();
    if (confirmingCancel.has(loop.id))
      return group.replaceChildren(
        el('span', {className: 'confirm'}, `Cancel loop ${loop.id}? Its agent is stopped. `),
        act('loop.cancel', 'Yes, cancel', 'danger', {'data-action': 'confirm-cancel'}),
        el('button', {'data-action': 'keep', onclick: (event) => {
          event.preventDefault();
          confirmingCancel.delete(loop.id);
          draw();
        }}, 'No, keep it'));
    group.replaceChildren(
      loop.state === 'paused' ? act('loop.resume', 'Resume') : act('loop.pause', 'Pause'),
      el('button', {className: 'danger', 'data-action': 'loop.cancel', onclick: (event) => {
        event.preventDefault();
        confirmingCancel.add(loop.id);
        draw();
      }}, 'Cancel'),
      location.hash.startsWith('#/loop/') ? ''
        : el('a', {href: `#/loop/${loop.id}?steer`, 'data-action': 'steer'}, 'Steer'));
  }
  draw();
  return group;
}

// ---- the loops

async function loopsView() {
  const loops = new Map();  // id → summary, the latest known
  let host = '';
  let scheduler = null;  // scheduler.get's, read again at every change (why queued loops wait)
  let shown = false;  // the table is on the page
  const message = el('div', {id: 'message'});
  const body = el('tbody');
  const session = new Session((method, params) => {
    if (method !== 'loop.changed') return;
    loops.set(params.id, params);
    if (shown) draw();
    // Drawn again only when what a queued loop waits for changed.
    const queueOf = (s) => s && `${s.paused} ${s.running} ${s.max_concurrent}`;
    call('scheduler.get').then((got) => {
      const changed = queueOf(got) !== queueOf(scheduler);
      scheduler = got;
      if (changed && shown) draw();
    }).catch(() => {});
  }, connectionLost);

  // Why the loop waits, and until when ('' for one that does not).
  function why(loop, now) {
    return describeWait(loop, scheduler, [...loops.values()], now);
  }

  function row(loop, now) {
    return el('tr', {'data-id': loop.id, 'data-state': loop.state},
      cell(null, 'num title', el('a', {href: '#/loop/' + loop.id}, loop.id)),
      cell(null, 'title name', el('a', {href: '#/loop/' + loop.id}, loop.name)),
      cell(null, 'title', stateBadge(loop), el('div', {className: 'why muted'}, why(loop, now))),
      cell('iter', 'num', iterationText(loop)),
      cell('time', 'num elapsed', fmtDuration(elapsed(loop, now))),
      cell('tokens', 'num', fmtTokens((loop.input_tokens || 0) + (loop.output_tokens || 0))),
      cell('cost', 'num', fmtCost(loop.cost_usd)),
      cell(null, 'path full', loop.workspace),
      cell(null, 'wide', host),
      cell(null, 'actions full', loopActions(loop, message)));
  }

  function draw() {
    const now = Date.now();
    const sorted = [...loops.values()].sort((a, b) => b.id - a.id);
    body.replaceChildren(...sorted.map((loop) => row(loop, now)));
    if (!sorted.length)
      body.append(el('tr', {}, el('td', {colspan: 10, className: 'muted full'}, 'No loop yet.')));
  }

  // Subscribe first, then list: no change can fall between the two.
  await session.call('events.subscribe');
  setLive(true);
  const [info, active, ended, schedulerNow] = await Promise.all([
    call('daemon.info'),
    call('loop.list', {states: liveStates}),
    call('loop.list', {states: endedStates, limit: 50}),
    call('scheduler.get'),
  ]);
  host = info.host;
  scheduler = schedulerNow;
  document.getElementById('daemon').textContent = `${info.host} · ralphd ${info.version}`;
  for (const loop of [...active.loops, ...ended.loops])
    if (!loops.has(loop.id)) loops.set(loop.id, loop);

  main.replaceChildren(
    el('h1', {}, 'Loops'),
    submitForm(message),
    message,
    cardTable('loops', [['id', 'num'], ['name'], ['state'], ['iter', 'num'],
                        ['elapsed', 'num'], ['tokens', 'num'], ['cost', 'num'],
                        ['workspace'], ['host', 'wide'], ['']], body));
  shown = true;
  draw();
  // The running loops' elapsed time and the waiting ones' "in 42 min" move on with the clock,
  // not with the daemon.
  const ticker = setInterval(() => {
    const now = Date.now();
    for (const tr of body.querySelectorAll('tr[data-state="running"]')) {
      const loop = loops.get(Number(tr.dataset.id));
      tr.querySelector('.elapsed').textContent = fmtDuration(elapsed(loop, now));
    }
    for (const tr of body.querySelectorAll('tr[data-state="waiting"]'))
      tr.querySelector('.why').textContent = why(loops.get(Number(tr.dataset.id)), now);
  }, 1000);
  return {leave: () => { clearInterval(ticker); session.close(); }};
}

function submitForm(message) {
  const field = (label, input) => el('label', {}, label, input);
  const workspace = el('input', {name: 'workspace', required: true, placeholder: '/home/me/project'});
  const name = el('input', {name: 'name', placeholder: 'the workspace\'s name'});
  const agent = el('select', {name: 'agent'}, el('option', {value: 'command'}, 'command'));
  const agentNote = el('span', {className: 'muted'});
  const command = el('input', {name: 'command', placeholder: 'for agent command: the program and its arguments'});
  const prompt = el('textarea', {name: 'prompt', placeholder: 'empty: PROMPT.md in the workspace'});
  const maxIterations = el('input', {name: 'max_iterations', type: 'number', min: 0, value: 30});
  // The agent a loop runs on unless another is chosen: as `ralphctl submit`'s, the first agent
  // CLI ralphd finds, in this order; else `command`.
  call('agents.list').then((result) => {
    agent.replaceChildren(...result.agents.map((a) => el('option', {value: a.name}, a.name)));
    const found = preferredAgents.find((name) => result.agents.some((a) => a.name === name && a.path));
    agent.value = found || 'command';
    agentNote.textContent = found ? ' (the first agent CLI ralphd finds)' : '';
  }).catch(() => {});
  const form = el('form', {
    className: 'stack',
    id: 'submit',
    onsubmit: async (event) => {
      event.preventDefault();
      message.replaceChildren();
      const params = {workspace: workspace.value, agent: agent.value,
                      max_iterations: Number(maxIterations.value)};
      if (name.value) params.name = name.value;
      if (command.value) params.command = command.value;
      if (prompt.value) params.prompt = prompt.value;
      try {
        const loop = await call('loop.submit', params);
        message.replaceChildren(el('p', {}, 'Queued ', el('a', {href: '#/loop/' + loop.id}, `loop ${loop.id}`), '.'));
      } catch (error) {
        showError(message, error);
      }
    },
  }, field('Workspace', workspace), field('Name', name), field(el('span', {}, 'Agent', agentNote), agent),
     field('Command', command), field('Prompt', prompt), field('Max iterations', maxIterations),
     el('div', {}, el('button', {type: 'submit'}, 'Submit')));
  return el('details', {id: 'submit-loop'}, el('summary', {}, 'Submit a loop'), form);
}

// ---- one loop

// A running loop's live output comes first, under its actions, with the running attempt's timer;
// an ended one's after its facts and attempts. The actions stay on the screen (app.css: sticky).
async function loopView(id) {
  const message = el('div', {id: 'message'});
  const head = el('div');
  const actions = el('div', {id: 'actions', className: 'actions bar'});
  const facts = el('div');
  const timer = el('p', {id: 'attempt-timer', className: 'muted'});
  let running = null;  // the attempt that runs, from the last loop.iterations
  const attemptsBody = el('tbody');
  const diff = el('div', {id: 'diff'});
  const rendered = el('pre', {className: 'output', id: 'output-rendered'});
  const raw = el('pre', {className: 'output', id: 'output-raw', hidden: true});
  const output = el('section', {id: 'output', 'data-offset': 0, 'data-final': 'false'});
  const decoder = new TextDecoder('utf-8');
  let loop = await call('loop.get', {id});
  let queue = {scheduler: null, loops: []};  // a queued loop's: why it waits
  let refreshing = null;

  // Follows the end of a <pre> only while the reader is at its end.
  function append(pre, text) {
    if (!text) return;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
    pre.append(text);
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  }

  function onOutput(params) {
    const bytes = Uint8Array.from(atob(params.data), (c) => c.charCodeAt(0));
    append(raw, decoder.decode(bytes, {stream: true}));
    append(rendered, params.text);
    output.dataset.offset = params.offset + params.length;
  }

  const session = new Session((method, params) => {
    if (method === 'loop.output' && params.id === id) onOutput(params);
    else if (method === 'loop.state' && params.id === id) {
      if (params.final) {
        append(raw, decoder.decode());
        output.dataset.final = 'true';
      }
      refresh();
    } else if (method === 'loop.changed' && params.id === id) {
      refresh();
    }
  }, connectionLost);

  // The loop and its attempts read again (at most one read at a time).
  function refresh() {
    if (refreshing) return;
    refreshing = Promise.all([call('loop.get', {id}), call('loop.iterations', {id})])
      .then(async ([got, iterations]) => {
        loop = got;
        if (loop.state === 'queued') {
          const [scheduler, running] = await Promise.all([
            call('scheduler.get'), call('loop.list', {states: ['running']})]);
          queue = {scheduler, loops: running.loops};
        }
        running = iterations.attempts.findLast((a) => !a.ended_at) || null;
        drawLoop();
        drawAttempts(iterations.attempts);
      })
      .catch((error) => showError(message, error))
      .finally(() => { refreshing = null; });
  }

  // Why it waits and until when, or why it stopped.
  function reasonText(now) {
    const why = describeWait(loop, queue.scheduler, queue.loops, now);
    if (!why) return loop.stop_reason;
    return 'Waits' + (why.startsWith('until ') ? ' ' : ': ') + why;
  }

  // "Iteration 3 · attempt 2 · running for 2m 05s", ticking; hidden when no attempt runs.
  function drawTimer(now) {
    timer.hidden = loop.state !== 'running' || !running;
    if (timer.hidden) return;
    timer.textContent = `Iteration ${running.iteration}` +
      (running.attempt > 1 ? ` · attempt ${running.attempt}` : '') +
      (running.kind === 'judge' ? ' · judge' : '') +
      ` · running for ${fmtDuration((now - parseTime(running.started_at)) / 1000)}`;
  }

  // The output first while the loop runs, else last.
  function placeOutput() {
    if (!output.isConnected) return;
    if (loop.state === 'running') main.insertBefore(output, facts);
    else main.append(output);
  }

  function drawLoop() {
    head.replaceChildren(
      el('h1', {}, `Loop ${loop.id} · ${loop.name} `, stateBadge(loop)),
      el('p', {id: 'stop-reason', className: loop.state === 'waiting' || loop.state === 'queued' ? 'why' : null},
        reasonText(Date.now())));
    actions.replaceChildren(loopActions(loop, message));
    actions.hidden = loop.state === 'completed';  // an ended loop may be retried or extended
    drawTimer(Date.now());
    placeOutput();
    const limits = [
      ['agent', loop.agent + (loop.model ? ` (${loop.model})` : '')],
      ['workspace', loop.worktree_path || loop.workspace],
      ['iterations', `${iterationText(loop)} (at least ${loop.min_iterations})`],
      ['attempts', `${loop.attempts} (${loop.retries} retries, at most ${loop.max_retries} per iteration)`],
      ['tokens', `${fmtTokens(loop.input_tokens)} in, ${fmtTokens(loop.output_tokens)} out` +
                 (loop.max_tokens ? ` of ${fmtTokens(loop.max_tokens)}` : '')],
      ['cost', fmtCost(loop.cost_usd) + (loop.max_cost_usd ? ` of ${fmtCost(loop.max_cost_usd)}` : '')],
      ['timeouts', `${fmtDuration(loop.timeout_s)} per attempt, ${loop.inactivity_timeout_s ? fmtDuration(loop.inactivity_timeout_s) + ' silent' : 'no inactivity limit'}`],
      ['budget', (loop.iterations_per_hour ? `${loop.iterations_per_hour}/hour ` : '') +
                 (loop.iterations_per_day ? `${loop.iterations_per_day}/day` : '') || 'the global one only'],
      ['stalls after', `${loop.stall_iterations} iterations without progress, ${loop.stall_failures} identical failures`],
      ['completion', `<promise>${loop.completion_phrase}</promise>` + (loop.judge ? `, judged by ${loop.judge}` : '') +
                     (loop.verify_command ? `, verified by ${loop.verify_command}` : '')],
      ['started', fmtTime(loop.started_at)],
      ['finished', fmtTime(loop.finished_at)],
    ];
    facts.replaceChildren(el('dl', {className: 'facts', id: 'limits'},
      limits.map(([name, value]) => [el('dt', {}, name), el('dd', {}, value)])));
    steer.hidden = endedStates.includes(loop.state);
  }

  function drawAttempts(attempts) {
    attemptsBody.replaceChildren(...attempts.map((a) => el('tr', {'data-attempt': a.id},
      cell(null, 'num title', `${a.iteration}.${a.attempt}`),
      cell(null, 'title', a.kind === 'judge' ? `judge ${a.agent}` : a.agent),
      cell(null, 'title', a.ended_at ? a.termination : 'running'),
      cell(null, 'title failure', a.failure || ''),
      cell('time', 'num', fmtDuration(((parseTime(a.ended_at) ?? Date.now()) - parseTime(a.started_at)) / 1000)),
      cell('tokens', 'num', fmtTokens(a.input_tokens + a.output_tokens)),
      cell('cost', 'num', fmtCost(a.cost_usd)),
      cell('changes', 'num', `${a.files_changed} +${a.insertions} −${a.deletions}`),
      cell(null, 'summary full', a.verdict ? `${a.verdict}: ${a.verdict_reasons}` : a.summary || a.error),
      cell(null, 'full', a.kind === 'work' && a.ended_at
        ? el('button', {'data-diff': a.id, onclick: () => showDiff(a)}, 'diff') : ''))));
  }

  async function showDiff(a) {
    diff.replaceChildren(el('p', {className: 'muted'}, 'Loading the diff…'));
    try {
      const result = await call('loop.diff', {id, attempt: a.id});
      const lines = result.diff.split('\n').map((line) => {
        const kind = line.startsWith('@@') ? 'hunk'
          : line.startsWith('+') && !line.startsWith('+++') ? 'add'
          : line.startsWith('-') && !line.startsWith('---') ? 'del' : null;
        return el('span', {className: kind}, line + '\n');
      });
      diff.replaceChildren(
        el('h2', {}, `Iteration ${a.iteration}, attempt ${a.attempt}: what changed`),
        result.diff ? el('pre', {className: 'diff'}, lines)
          : el('p', {className: 'muted'}, result.error || 'No change.'),
        el('p', {className: 'muted', hidden: !result.cut}, 'The diff is cut here: it is longer.'));
      diff.scrollIntoView({block: 'nearest'});
    } catch (error) {
      showError(diff, error);
    }
  }

  const steerText = el('textarea', {name: 'steer', placeholder: 'A hint for the next iteration'});
  const steer = el('form', {
    className: 'stack',
    id: 'steer',
    onsubmit: async (event) => {
      event.preventDefault();
      message.replaceChildren();
      try {
        const result = await call('loop.steer', {id, text: steerText.value});
        steerText.value = '';
        message.replaceChildren(el('p', {}, `The hint goes into iteration ${result.next_iteration}.`));
      } catch (error) {
        showError(message, error);
      }
    },
  }, el('label', {}, 'Steer', steerText), el('div', {}, el('button', {type: 'submit'}, 'Send')));

  const tabs = el('div', {className: 'tabs'},
    el('button', {className: 'current', 'data-view': 'rendered', onclick: () => showOutput('rendered')}, 'Rendered'),
    el('button', {'data-view': 'raw', onclick: () => showOutput('raw')}, 'Raw'));
  function showOutput(which) {
    rendered.hidden = which !== 'rendered';
    raw.hidden = which !== 'raw';
    for (const button of tabs.children) button.classList.toggle('current', button.dataset.view === which);
  }
  output.append(el('h2', {}, 'Output'), timer, tabs, rendered, raw);

  main.replaceChildren(head, actions, message, facts, steer,
    el('h2', {}, 'Attempts'),
    cardTable('attempts', [['#', 'num'], ['agent'], ['termination'], ['failure'],
                           ['time', 'num'], ['tokens', 'num'], ['cost', 'num'],
                           ['diff stats', 'num'], ['answer'], ['']], attemptsBody),
    diff, output);
  drawLoop();
  // The tail replays the output from its first byte (of its last lines when it is long), then
  // follows it live; the events say when an attempt ended.
  const long = loop.output_bytes > maxShownBytes;
  const tail = await session.call('loop.tail', {id, encoding: 'base64', render: true,
                                                ...(long ? {last_lines: 20000} : {})});
  if (tail.offset > 0)
    output.insertBefore(el('p', {className: 'muted'}, `The first ${tail.offset} bytes are not shown: ` +
      `\`ralphctl tail --raw ${id}\` prints them all.`), tabs);
  await session.call('events.subscribe');
  setLive(true);
  refresh();
  if (location.hash.endsWith('?steer')) steerText.focus();
  // "in 42 min" and the attempt's time move on with the clock.
  const ticker = setInterval(() => {
    const now = Date.now();
    const reason = head.querySelector('#stop-reason');
    if (reason && loop.state === 'waiting') reason.textContent = reasonText(now);
    drawTimer(now);
  }, 1000);
  return {leave: () => { clearInterval(ticker); session.close(); }};
}

// ---- the morning report

// How an attempt ended, by colour; a usage limit has a colour of its own.
const outcomeColours = {
  exited: '#1a7f37', failed: '#cf222e', crashed: '#cf222e', timeout: '#d29922',
  spawn_failed: '#cf222e', interrupted: '#8b949e', cancelled: '#8b949e', running: '#2f6feb',
  'usage limit': '#8250df',
};

// The report lists the loops that need a look first, in this order, then the others as ralphd
// gave them.
const problemStates = ['failed', 'stalled', 'waiting'];

function problemRank(loop) {
  const rank = problemStates.indexOf(loop.state);
  return rank < 0 ? problemStates.length : rank;
}

// A chart's box; `rows` (a chart of one row per loop) makes it tall enough to name every row.
function chartBox(id, title, note, rows) {
  const canvas = el('div', {className: 'canvas'}, el('canvas', {id}));
  if (rows) canvas.style.height = `${Math.max(16 * 16, rows * 28 + 64)}px`;
  return el('div', {className: 'chart'}, el('h2', {}, title), note || null, canvas);
}

async function reportView() {
  const hours = Number(new URLSearchParams(location.hash.split('?')[1] || '').get('hours')) || 12;
  const since = new Date(Date.now() - hours * 3600e3).toISOString();
  const [report, budget] = await Promise.all([call('history.report', {since}), call('budget.get')]);
  const loops = [...report.loops].sort((a, b) => problemRank(a) - problemRank(b));
  const attemptsOf = await Promise.all(loops.map((loop) => call('loop.iterations', {id: loop.id})));
  const sinceMs = parseTime(report.since);
  const untilMs = parseTime(report.until);
  // The time axes start with the window's first attempt, not with an empty evening.
  const starts = attemptsOf.flatMap((r) => r.attempts).map((a) => parseTime(a.started_at));
  const earliest = Math.min(untilMs, ...starts);
  const firstMs = starts.length ? Math.max(sinceMs, earliest - (untilMs - earliest) * 0.05) : sinceMs;
  const tick = untilMs - firstMs < 600e3 ? fmtSeconds : fmtClock;
  // A chart names a loop in a few words: its id and the start of its name.
  const label = (loop) => {
    const text = `#${loop.id} ${loop.name}`;
    return text.length > 24 ? text.slice(0, 23) + '…' : text;
  };
  const inWindow = (a) => a.ended_at === null || parseTime(a.ended_at) >= sinceMs;
  // Each attempt's cost and tokens, added up in the order they ended.
  const ended = attemptsOf.flatMap((r) => r.attempts).filter((a) => a.ended_at && inWindow(a))
    .sort((a, b) => parseTime(a.ended_at) - parseTime(b.ended_at));

  const t = report.totals;
  const picker = el('select', {id: 'report-hours', onchange: (e) => { location.hash = '#/report?hours=' + e.target.value; }},
    [6, 12, 24, 72, 168].map((h) => el('option', {value: h, selected: h === hours}, `last ${h} hours`)));
  const rows = loops.map((loop) => el('tr', {'data-id': loop.id, 'data-state': loop.state},
    cell(null, 'num title', el('a', {href: '#/loop/' + loop.id}, loop.id)),
    cell(null, 'title name', loop.name),
    cell(null, 'title', stateBadge(loop)),
    cell(null, 'summary full', loop.stop_reason),
    cell('iter / att', 'num', `${loop.iterations} / ${loop.attempts}`),
    cell('commits', 'num', loop.commits),
    cell('changes', 'num', `${loop.files_changed} +${loop.insertions} −${loop.deletions}`),
    cell('tokens', 'num', fmtTokens(loop.input_tokens + loop.output_tokens)),
    cell('cost', 'num', fmtCost(loop.cost_usd)),
    cell('time', 'num', fmtDuration(loop.duration_s))));
  const problems = problemStates.map((state) => [state, loops.filter((l) => l.state === state).length])
    .filter(([, n]) => n > 0).map(([state, n]) => `${n} ${state}`);

  // Only charts with something to draw.
  const usageShown = loops.some((l) => l.input_tokens + l.output_tokens > 0 || l.cost_usd);
  const boxes = [];
  if (usageShown) boxes.push(chartBox('chart-usage', 'Tokens and cost per loop'));
  if (ended.length) boxes.push(chartBox('chart-cost', 'Cost and tokens over time'));
  if (loops.length)
    boxes.push(chartBox('chart-timeline', 'Iterations',
      el('p', {className: 'muted'}, 'Each attempt, coloured by how it ended; a usage limit in violet.'),
      loops.length));
  boxes.push(budget.use.length ? chartBox('chart-budget', 'Budgets')
    : el('div', {className: 'chart', id: 'no-budget'}, el('h2', {}, 'Budgets'),
      el('p', {className: 'muted'}, 'No budget is set (ralphctl budget set).')));

  main.replaceChildren(
    el('h1', {}, 'Morning report ', picker),
    el('p', {className: 'muted'}, `${fmtTime(report.since)} – ${fmtTime(report.until)}`),
    problems.length ? el('p', {id: 'problems', className: 'why'}, `Needs a look: ${problems.join(', ')} (listed first).`) : null,
    el('div', {className: 'totals', id: 'totals'},
      el('span', {}, 'loops ', el('b', {}, t.loops)),
      el('span', {}, 'attempts ', el('b', {}, t.attempts)),
      el('span', {}, 'tokens ', el('b', {}, fmtTokens(t.input_tokens + t.output_tokens))),
      el('span', {}, 'cost ', el('b', {}, fmtCost(t.cost_usd))),
      el('span', {}, 'agent time ', el('b', {}, fmtDuration(t.agent_time_s))),
      Object.entries(t.by_state).map(([state, n]) => el('span', {}, state + ' ', el('b', {}, n)))),
    cardTable('report-loops', [['id', 'num'], ['name'], ['state'], ['why'],
                               ['iter / att', 'num'], ['commits', 'num'], ['changes', 'num'],
                               ['tokens', 'num'], ['cost', 'num'], ['time', 'num']],
      el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', {colspan: 10, className: 'muted full'}, 'No loop in this window.')))),
    el('div', {className: 'charts'}, boxes));

  const style = getComputedStyle(document.documentElement);
  Chart.defaults.color = style.getPropertyValue('--muted').trim();
  Chart.defaults.borderColor = style.getPropertyValue('--line').trim();
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.animation = false;
  const timeAxis = {type: 'linear', min: firstMs, max: untilMs, ticks: {callback: (v) => tick(v), maxTicksLimit: 6}};
  const charts = [];
  const draw = (id, config) => {
    const canvas = document.getElementById(id);
    if (canvas) charts.push(new Chart(canvas, config));
  };

  draw('chart-usage', {
    type: 'bar',
    data: {
      labels: loops.map(label),
      datasets: [
        {label: 'input tokens', data: loops.map((l) => l.input_tokens), backgroundColor: '#6ea8fe', stack: 'tokens'},
        {label: 'output tokens', data: loops.map((l) => l.output_tokens), backgroundColor: '#2f6feb', stack: 'tokens'},
        {label: 'cost (USD)', data: loops.map((l) => l.cost_usd ?? 0), backgroundColor: '#d29922', yAxisID: 'cost', stack: 'cost'},
      ],
    },
    options: {scales: {y: {beginAtZero: true, title: {display: true, text: 'tokens'}},
                       cost: {position: 'right', beginAtZero: true, grid: {drawOnChartArea: false}, title: {display: true, text: 'USD'}}}},
  });

  let cost = 0;
  let tokens = 0;
  const costPoints = [{x: firstMs, y: 0}];
  const tokenPoints = [{x: firstMs, y: 0}];
  for (const a of ended) {
    cost += a.cost_usd || 0;
    tokens += a.input_tokens + a.output_tokens;
    costPoints.push({x: parseTime(a.ended_at), y: Number(cost.toFixed(6))});
    tokenPoints.push({x: parseTime(a.ended_at), y: tokens});
  }
  draw('chart-cost', {
    type: 'line',
    data: {datasets: [
      {label: 'cost (USD)', data: costPoints, stepped: true, borderColor: '#d29922', backgroundColor: '#d29922', yAxisID: 'y'},
      {label: 'tokens', data: tokenPoints, stepped: true, borderColor: '#2f6feb', backgroundColor: '#2f6feb', yAxisID: 'tokens'},
    ]},
    options: {parsing: false, scales: {x: timeAxis, y: {beginAtZero: true, title: {display: true, text: 'USD'}},
      tokens: {position: 'right', beginAtZero: true, grid: {drawOnChartArea: false}}}},
  });

  // One bar per attempt from its start to its end, in its loop's row; every row named.
  const byOutcome = new Map();
  loops.forEach((loop, i) => {
    for (const a of attemptsOf[i].attempts.filter(inWindow)) {
      const outcome = a.failure === 'rate_limit' ? 'usage limit' : a.ended_at ? a.termination : 'running';
      if (!byOutcome.has(outcome)) byOutcome.set(outcome, []);
      byOutcome.get(outcome).push({
        x: [Math.max(parseTime(a.started_at), firstMs), parseTime(a.ended_at) ?? untilMs],
        y: label(loop),
      });
    }
  });
  draw('chart-timeline', {
    type: 'bar',
    data: {
      labels: loops.map(label),
      datasets: [...byOutcome].map(([outcome, data]) => ({
        label: outcome, data, backgroundColor: outcomeColours[outcome] || '#8b949e', grouped: false,
        minBarLength: 2,
      })),
    },
    options: {indexAxis: 'y', scales: {x: timeAxis, y: {ticks: {autoSkip: false}}}},
  });

  // Each budget that is set: how much of its limit its window used.
  draw('chart-budget', {
    type: 'bar',
    data: {
      labels: budget.use.map((u) => (u.loop_id ? `loop ${u.loop_id} ` : '') + u.name.replaceAll('_', ' ')),
      datasets: [{label: '% of the limit used', data: budget.use.map((u) => (u.limit > 0 ? (100 * u.used) / u.limit : 0)),
                  backgroundColor: budget.use.map((u) => (u.used >= u.limit ? '#cf222e' : '#1a7f37'))}],
    },
    options: {indexAxis: 'y', scales: {x: {min: 0, suggestedMax: 100}},
              plugins: {tooltip: {callbacks: {label: (item) => {
                const u = budget.use[item.dataIndex];
                return `${u.used} of ${u.limit}`;
              }}}}},
  });
  setLive(true);
  return {leave: () => charts.forEach((chart) => chart.destroy())};
}

window.addEventListener('hashchange', route);
route();
