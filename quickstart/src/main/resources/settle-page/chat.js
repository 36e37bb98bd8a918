// The chat page: what the page shows is a fold of the session's event stream (kept with the id of the last
// event in sessionStorage, so a reload rebuilds it and resumes after that id) plus the session view, polled
// while a debounce timer is armed, a message is unanswered or a turn runs.
import { Api, problem, readEvents } from './settle.js';

const $ = (id) => document.getElementById(id);
const TYPING_EVERY_MS = 1000;
const POLL_MS = 250;
/** The reasons a turn is discarded because a newer message arrived. */
const NEWER_MESSAGE = /a newer message arrived/;
const KEY = 'settle.key';
const stored = (session) => 'settle.stream.' + session;

let api = null;
let session = null;
let seen = { last: null, events: [] };
let streamAbort = null;
let pollTimer = null;
let saveTimer = null;
let composeKey = null;
let lastTyping = 0;
let lastKeystroke = 0;
let sending = false;
let statusView = null;

// ---- the event stream: read with fetch (the key goes in a header), resumed after the last event seen

async function follow(id) {
  streamAbort?.abort();
  const abort = new AbortController();
  streamAbort = abort;
  while (!abort.signal.aborted && session === id) {
    try {
      const res = await api.events(id, seen.last, abort.signal);
      if (!res.ok) {
        streamState(res.status === 404 ? 'waiting for the session' : 'refused: ' + (await problem(res)));
        await pause(res.status === 404 ? 1000 : 3000);
        continue;
      }
      streamState('live' + (seen.last === null ? '' : ' (after event ' + seen.last + ')'));
      for await (const event of readEvents(res.body)) {
        if (abort.signal.aborted || session !== id) return;
        receive(event);
      }
      streamState('reconnecting');
    } catch (e) {
      if (abort.signal.aborted) return;
      streamState('reconnecting');
      await pause(1000);
    }
  }
}

function receive(event) {
  const data = JSON.parse(event.data);
  apply(event.type, data);
  seen.events.push({ type: event.type, data });
  seen.last = Number(event.id);
  document.body.dataset.lastEventId = String(seen.last);
  save();
  if (event.type !== 'reply.delta') refreshStatus();
}

/** Stores what was shown with the id of its last event, together: a reload shows it again and asks for what follows. */
function save() {
  if (saveTimer) return;
  saveTimer = setTimeout(() => {
    saveTimer = null;
    try {
      sessionStorage.setItem(stored(session), JSON.stringify(seen));
    } catch {
      sessionStorage.removeItem(stored(session)); // too big to keep: a reload reads the stream from its start
    }
  }, 0);
}

// ---- what each event changes on the page

function apply(type, d) {
  switch (type) {
    case 'message.accepted': {
      const el = add('div', 'msg', $('log'));
      el.id = 'msg-' + d.version;
      el.dataset.version = d.version;
      add('span', 'v', el).textContent = 'v' + d.version;
      el.append(d.text);
      break;
    }
    case 'turn.started': {
      // turns of a session run one at a time under its lease and events come in order: once a turn starts, any
      // other turn still open has ended, even one whose turn.abandoned could not be written (the database failed)
      for (const earlier of document.querySelectorAll('.turn.running')) {
        if (earlier.dataset.turnId !== String(d.turnId)) {
          stopped(earlier.dataset.turnId, 'its worker was lost or hit an error');
        }
      }
      const el = turn(d.turnId);
      el.dataset.from = d.fromVersion;
      el.dataset.to = d.toVersion;
      const covers = el.querySelector('.covers');
      covers.textContent = `turn ${d.turnId} answers v${d.fromVersion}–v${d.toVersion}`;
      for (let v = d.fromVersion; v <= d.toVersion; v++) $('msg-' + v)?.classList.add('in-turn');
      break;
    }
    case 'reply.delta':
      turn(d.turnId).querySelector('.text').append(d.text);
      break;
    case 'tool.started':
    case 'tool.completed': {
      const el = turn(d.turnId);
      let tool = el.querySelector(`[data-execution="${d.executionId}"]`);
      if (!tool) {
        tool = add('li', 'tool', el.querySelector('.tools'));
        tool.dataset.execution = d.executionId;
        add('span', 'name', tool).textContent = `${d.tool}(${d.arguments ?? ''}) `;
        add('span', 'status', tool);
        add('span', 'result', tool);
      }
      const status = d.status ?? 'EXECUTING';
      tool.className = 'tool ' + status;
      tool.querySelector('.status').textContent = status;
      tool.querySelector('.result').textContent = d.result == null ? '' : ' → ' + d.result;
      break;
    }
    case 'turn.discarded': {
      const el = end(d.turnId, 'discarded');
      el.querySelector('.note').textContent = NEWER_MESSAGE.test(d.reason ?? '')
        ? 'interrupted by your newer message'
        : 'discarded: ' + d.reason;
      break;
    }
    case 'reply.created': {
      const el = end(d.turnId, 'committed');
      const streamed = el.querySelector('.text');
      if (streamed.textContent !== d.text) {
        // the streamed text is left as it came; the reply as committed differs (text streamed beside tool calls)
        streamed.classList.add('differs');
        add('div', 'committed-text', el).textContent = d.text;
      }
      el.dataset.coversVersion = d.coversVersion;
      el.querySelector('.state').textContent = `reply, covers v${el.dataset.from ?? 1}–v${d.coversVersion}`;
      break;
    }
    case 'turn.abandoned':
      stopped(d.turnId, d.reason);
      break;
    case 'turn.failed':
      end(d.turnId, 'failed').querySelector('.note').textContent = 'failed: ' + (d.error ?? d.reason ?? '');
      break;
    case 'delivery.exhausted':
      add('div', 'notice', $('log')).textContent = 'a webhook delivery of this session was dead-lettered';
      break;
  }
}

function turn(turnId) {
  let el = $('turn-' + turnId);
  if (el) return el;
  el = add('div', 'turn running', $('log'));
  el.id = 'turn-' + turnId;
  el.dataset.turnId = turnId;
  const head = add('div', 'head', el);
  add('span', 'covers', head);
  add('span', 'state', head).textContent = 'generating';
  add('ul', 'tools', el);
  add('div', 'text', el);
  add('div', 'note', el);
  return el;
}

/** A turn that ended without a reply of its own (its worker was lost, or an error broke it); its text is kept. */
function stopped(turnId, why) {
  end(turnId, 'abandoned').querySelector('.note').textContent =
    `stopped without a reply (${why}); a later turn answers`;
}

function end(turnId, state) {
  const el = turn(turnId);
  el.classList.remove('running');
  el.classList.add(state);
  el.dataset.state = state;
  el.querySelector('.state').textContent = state;
  return el;
}

function add(tag, className, parent) {
  const el = document.createElement(tag);
  el.className = className;
  parent.append(el);
  return el;
}

// ---- the session view: debounce timer, window, counters

async function refreshStatus() {
  clearTimeout(pollTimer);
  const id = session;
  try {
    const view = await api.session(id);
    if (id !== session) return;
    statusView = view;
    if (view === null) {
      showDebounce('idle', 'new session: no message yet');
      return;
    }
    const turns = await api.turns(id);
    if (id !== session) return;
    $('model-calls').textContent = turns.reduce((sum, t) => sum + (t.modelCalls ?? 0), 0);
    $('discarded-tokens').textContent = view.discardedTokens ?? 0;
    $('window').textContent = view.windowMs == null ? '' : `window ${view.windowMs} ms (${view.windowCause})`;
    renderDebounce();
    if (view.debounce?.armed && !view.debounce.heldUntil && typingNow()) {
      lastTyping = 0; // the last signal reached no armed timer (it came before the message armed one): again
      signalTyping();
    }
    const unanswered = view.version > view.repliedVersion;
    if (view.debounce?.armed || view.state !== 'idle' || unanswered) {
      pollTimer = setTimeout(refreshStatus, unanswered && !view.debounce?.armed ? POLL_MS / 2.5 : POLL_MS);
    }
  } catch (e) {
    showError(e.message);
  }
}

function renderDebounce() {
  const view = statusView;
  if (!view) return;
  const d = view.debounce ?? {};
  if (view.state === 'generating') showDebounce('generating', 'generating a reply');
  else if (d.armed) {
    const fireIn = Math.max(0, Date.parse(d.fireAt) - Date.now());
    if (d.cause === 'typing') showDebounce('held', `held by typing: firing in ${fireIn} ms`);
    else showDebounce('armed', `armed: firing in ${fireIn} ms (${d.cause})`);
  } else showDebounce('idle', 'idle');
}

function showDebounce(state, text) {
  const el = $('debounce');
  el.className = 'debounce ' + state;
  el.dataset.state = state;
  el.textContent = text;
}

// ---- composing and sending

function onInput() {
  const text = $('text').value;
  $('send').disabled = sending || text.trim() === '' || !session || !api;
  if (text.trim() === '' || !session || !api) return;
  composeKey ??= crypto.randomUUID();
  lastKeystroke = Date.now();
  if (!sending) signalTyping(); // while a message is in flight the signal waits for it (see send)
}

/** Whether the user is typing a message: a keystroke within the last TYPING_EVERY_MS, and text in the box. */
function typingNow() {
  return !sending && $('text').value.trim() !== '' && Date.now() - lastKeystroke < TYPING_EVERY_MS;
}

/** At most one typing signal per TYPING_EVERY_MS: it holds an armed timer for the configured typing hold. */
function signalTyping() {
  const now = Date.now();
  if (now - lastTyping >= TYPING_EVERY_MS) {
    lastTyping = now;
    api.typing(session);
  }
}

/** Sends the composed message: out of the box at once (the next one can be typed meanwhile), with its own key. */
async function send(e) {
  e?.preventDefault();
  const text = $('text').value;
  if (sending || text.trim() === '' || !session || !api) return;
  sending = true;
  $('send').disabled = true;
  const key = composeKey ?? crypto.randomUUID(); // one key per composed message: sent twice, it is one message
  composeKey = null;
  lastTyping = 0; // the next message's first keystroke signals at once
  $('text').value = '';
  try {
    await api.post(session, text, key);
    showError('');
    // a signal sent before the message committed finds nothing to hold: typed meanwhile, it goes now
    if ($('text').value.trim() !== '') signalTyping();
  } catch (err) {
    if ($('text').value === '') {
      $('text').value = text;
      composeKey = key; // Send again retries it with the same key
    }
    showError('not sent (' + err.message + ')');
  } finally {
    sending = false;
    onInput();
  }
}

// ---- sessions and the key

function open(id) {
  if (!id) return;
  streamAbort?.abort();
  session = id;
  $('session').value = id;
  history.replaceState(null, '', '#session=' + encodeURIComponent(id));
  $('log').replaceChildren();
  statusView = null;
  $('model-calls').textContent = '0';
  $('discarded-tokens').textContent = '0';
  $('window').textContent = '';
  composeKey = null;
  seen = JSON.parse(sessionStorage.getItem(stored(id)) ?? 'null') ?? { last: null, events: [] };
  for (const event of seen.events) apply(event.type, event.data);
  if (seen.last !== null) document.body.dataset.lastEventId = String(seen.last);
  if (!api) {
    showDebounce('idle', 'paste the API key to start');
    return;
  }
  follow(id);
  refreshStatus();
  onInput();
}

function newSessionId() {
  return 'chat-' + crypto.randomUUID().slice(0, 8);
}

function streamState(text) {
  $('stream').textContent = 'stream ' + text;
  $('stream').dataset.state = text.split(' ')[0];
}

function showError(text) {
  $('error').hidden = text === '';
  $('error').textContent = text;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function useKey(key) {
  api = key ? new Api(key) : null;
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
  if (session) open(session);
}

$('key').addEventListener('change', () => useKey($('key').value.trim()));
$('session-form').addEventListener('submit', (e) => {
  e.preventDefault();
  open($('session').value.trim());
});
$('new').addEventListener('click', () => open(newSessionId()));
$('text').addEventListener('input', onInput);
$('text').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) send(e);
});
$('composer').addEventListener('submit', send);
setInterval(renderDebounce, 100);

const key = sessionStorage.getItem(KEY);
if (key) {
  $('key').value = key;
  api = new Api(key);
}
const fromHash = new URLSearchParams(location.hash.slice(1)).get('session');
open(fromHash || newSessionId());
