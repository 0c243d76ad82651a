// The web responder's page: pairs, fetches, stores and draws. What it draws
// (every cell, every word, the time remaining, right to left) and whether
// an answer may be sent comes from qp-core compiled to WebAssembly
// (`wasm_bindgen.Responder`); nothing here re-implements a rule. The asker's
// text is always set as text (textContent), never as HTML.
'use strict';

// The feed waits on the server (GET /api/questions/pending/wait, a
// long-poll that returns the moment the person's list changes); the timer
// is only the fallback when a wait fails (offline, refused, an older server).
const POLL_MS = 2000;
const WAIT_SECS = 25;
let feedVersion = null; // the version of the pending list drawn, sent as `since`
let feedWait = null; // the AbortController of the wait held now
let historyRead = false; // the newest page of the person's history is in `questions`
let responder = null; // wasm_bindgen.Responder
let session = null; // {token, user: {id, display_name}}
const questions = new Map(); // id -> the server's Question
const notes = new Map(); // id -> a line about my last attempt (a refusal)
const drafts = new Map(); // id -> the reply being typed, kept across redraws
let pollTimer = null;
let sheetFor = null;
let drawn = null; // what the feed last drew (its cells, queued, notes): no redraw when unchanged
let openFor = null; // a question to scroll to and focus (?q=, a notification tapped)
let linkCode = null; // a pairing link's code, shown and waiting for the person's click
let linkArmedAt = 0; // when its button starts to count (ms since the epoch)
const LINK_ARM_MS = 1000;

const $ = (id) => document.getElementById(id);
const t = (id) => responder.text(id);
const tn = (id, names) => responder.textWith(id, JSON.stringify(names));

function applyTexts() {
  document.documentElement.lang = responder.language();
  document.documentElement.dir = responder.rtl() ? 'rtl' : 'ltr';
  document.title = t('web-app-name');
  for (const el of document.querySelectorAll('[data-text]')) el.textContent = t(el.dataset.text);
}

function show(which) {
  $('pair').hidden = which !== 'pair';
  $('link').hidden = which !== 'link';
  $('feed-section').hidden = which !== 'feed';
  $('account').hidden = which !== 'feed';
}

async function api(path, opts = {}) {
  const token = session.token;
  const headers = Object.assign({ 'Authorization': `Bearer ${token}` }, opts.headers || {});
  const resp = await fetch(path, Object.assign({}, opts, { headers, credentials: 'omit', cache: 'no-store' }));
  if (resp.status === 401) {
    await signedOut(token);
    throw new Error('signed out');
  }
  return resp;
}

// ---- pairing -------------------------------------------------------------

// The code arrives in the fragment (/pair#CODE redirects here, keeping it);
// it leaves the address bar before anything else happens.
function codeFromUrl() {
  const code = decodeURIComponent(location.hash.replace(/^#/, ''));
  if (location.hash) history.replaceState(null, '', location.pathname);
  return code.trim();
}

function postJson(path, body) {
  return fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  });
}

// A pairing link is never redeemed on load: anyone can send one, and
// redeeming it would sign this browser in to the sender's choice of
// account. The server says whose account the code is for (without spending
// it); the page names that account, and the one signed in now, and pairs
// only when the person clicks.
async function openLink(code) {
  linkCode = null;
  show('link');
  $('link-heading').textContent = t('web-link-checking');
  for (const id of ['link-detail', 'link-replace', 'link-accept', 'link-cancel']) $(id).hidden = true;
  let resp;
  try {
    resp = await postJson('/api/pair/preview', { code });
  } catch (e) {
    // Nothing retries a preview: the pairing's own "could not reach".
    linkFailed(responder.pairFailure(0));
    return;
  }
  if (!resp.ok) {
    linkFailed(responder.pairFailure(resp.status));
    return;
  }
  const preview = await resp.json();
  const names = {
    name: preview.user.display_name,
    server: location.host,
    current: session ? session.user.display_name : '',
  };
  $('link-heading').textContent = tn('web-link-heading', names);
  $('link-detail').textContent = tn('web-link-detail', names);
  if (session) {
    const same = session.user.id === preview.user.id;
    $('link-replace').textContent = tn(same ? 'web-link-again' : 'web-link-replace', names);
  }
  $('link-accept').textContent = tn('web-link-accept', names);
  $('link-cancel').textContent = session ? tn('web-link-stay', names) : t('web-link-cancel');
  $('link-detail').hidden = false;
  $('link-replace').hidden = !session;
  $('link-accept').hidden = false;
  $('link-cancel').hidden = false;
  // A click counts only once the page has been in front of the person a
  // moment: a double click on the sender's page, landing here, pairs
  // nothing. The button stays focusable meanwhile (aria-disabled).
  const accept = $('link-accept');
  accept.disabled = false;
  accept.setAttribute('aria-disabled', 'true');
  linkArmedAt = Date.now() + LINK_ARM_MS;
  setTimeout(() => { if (linkCode === code) accept.setAttribute('aria-disabled', 'false'); }, LINK_ARM_MS);
  linkCode = code;
  $('link-heading').focus();
}

// The link did not work: back to where the person was, saying so.
function linkFailed(message) {
  linkCode = null;
  if (session) {
    signedIn();
    $('feed-note').textContent = message;
  } else {
    show('pair');
    $('pair-status').textContent = message;
  }
}

async function acceptLink() {
  const code = linkCode;
  if (!code || Date.now() < linkArmedAt) return;
  linkCode = null;
  $('link-accept').disabled = true;
  if (!(await pair(code, $('link-heading')))) linkFailed($('link-heading').textContent);
}

function cancelLink() {
  linkCode = null;
  if (session) signedIn();
  else show('pair');
}

// Redeems `code` for this browser's token; `status` says how it goes.
// True when paired.
async function pair(code, status) {
  status.textContent = t('web-pairing');
  let resp;
  try {
    resp = await postJson('/api/pair', { code, label: 'web browser' });
  } catch (e) {
    status.textContent = responder.pairFailure(0);
    return false;
  }
  if (!resp.ok) {
    status.textContent = responder.pairFailure(resp.status);
    return false;
  }
  const out = await resp.json();
  status.textContent = '';
  await replaceSession(out);
  return true;
}

// A new pairing replaces this browser's session. The old token is revoked
// first (as signing out does), with the devices it registered. When the
// account changes, nothing of the old one carries over: answers it queued
// offline are sent as it or dropped, and this browser's push subscription
// is ended, not moved to the new account (notifications are turned on
// again, by the person, for the new one).
async function replaceSession(out) {
  const old = session || (await qpStore.session());
  const switched = !old || !old.user || old.user.id !== out.user.id;
  let wasNotified = false;
  if (switched) {
    stopFeed();
    if (old && old.token) await qpFlush(old).catch(() => {});
    await qpStore.clear();
    // The old account's notifications go: their buttons would answer as the new one.
    const reg = 'serviceWorker' in navigator && await navigator.serviceWorker.getRegistration().catch(() => null);
    if (reg) for (const n of await reg.getNotifications().catch(() => [])) n.close();
    if (self.qpWebPush) wasNotified = await self.qpWebPush.unsubscribe().catch(() => false);
    questions.clear();
    historyRead = false;
    drafts.clear();
    notes.clear();
    drawn = null;
    $('feed').replaceChildren();
  }
  if (old && old.token && old.token !== out.token) {
    await fetch('/api/me/token', {
      method: 'DELETE',
      headers: { 'Authorization': `Bearer ${old.token}` },
      credentials: 'omit',
      cache: 'no-store',
    }).catch(() => {});
  }
  session = { token: out.token, user: out.user };
  await qpStore.saveSession(session);
  signedIn();
  if (old && switched && wasNotified) {
    $('feed-note').textContent = tn('web-notifications-switched', { name: out.user.display_name });
  }
}

function signedIn() {
  $('feed-note').textContent = '';
  responder.setUser(session.user.id);
  $('user-name').textContent = session.user.display_name;
  show('feed');
  offerNotifications().catch(() => {});
  restoreFeed().catch(() => {});
  refresh();
}

// What the feed showed last time (kept in IndexedDB), drawn until the
// server answers: offline, it is what the page knew.
async function restoreFeed() {
  const known = session && await qpStore.feed(session);
  if (!Array.isArray(known) || !session) return;
  let added = false;
  for (const q of known) {
    if (!questions.has(q.id)) {
      questions.set(q.id, q);
      added = true;
    }
  }
  if (added) await render();
}

// The session of `token` ended (a 401, or signing out). Only what it kept
// is cleared, and only while it is the stored one: when another tab has
// signed this browser in since (another account, or the same person
// again), its sign-in, its kept feed and this browser's push subscription
// are its own, and this tab follows it instead of signing it out.
async function signedOut(token) {
  if (!session || session.token !== token) return; // an older token's 401: this tab has moved on
  stopFeed();
  session = null;
  questions.clear();
  historyRead = false;
  drafts.clear();
  notes.clear();
  drawn = null;
  $('feed').replaceChildren();
  const cleared = await qpStore.clearSession(token).catch(() => false);
  if (cleared) {
    if (self.qpWebPush) await self.qpWebPush.unsubscribe().catch(() => {});
  } else {
    const now = await qpStore.session().catch(() => null);
    if (now && !session) {
      session = now;
      signedIn();
      return;
    }
  }
  if (session) return;
  show('pair');
  $('pair-code').focus();
}

async function signOut() {
  const mine = session;
  try {
    await api('/api/me/token', { method: 'DELETE' });
  } catch (e) {
    // Offline: the token is forgotten here all the same.
  }
  if (mine) await signedOut(mine.token);
}

// ---- the feed ------------------------------------------------------------

// Stops the feed's loop: its timer and the wait it holds.
function stopFeed() {
  clearTimeout(pollTimer);
  if (feedWait) feedWait.abort();
  feedWait = null;
  feedVersion = null;
}

// One turn of the feed's loop, started again at once after a wait returns
// (the server held it until something changed), after POLL_MS when it
// failed. Called from outside (online, the service worker's message), it
// ends the wait held now and starts a fresh one.
async function refresh() {
  clearTimeout(pollTimer);
  if (feedWait) feedWait.abort();
  if (!session) return;
  const wait = new AbortController();
  feedWait = wait;
  let next = 0;
  try {
    await poll(wait.signal);
  } catch (e) {
    if (wait.signal.aborted || !session) return;
    feedVersion = null;
    next = POLL_MS;
    $('net-status').textContent = navigator.onLine ? t('web-load-failed') : t('web-offline');
    await render().catch(() => {});
  }
  if (session && feedWait === wait) pollTimer = setTimeout(refresh, next);
}

// What the person's feed held before this page opened (answered, expired,
// cancelled, with who answered): the first page of their history (the
// newest HISTORY_PAGE questions), read once per session; the waits keep it
// current from there. A small page, kept with its ETag: a reload downloads
// it again only when it changed, and then only that page (compressed),
// however long the person's history.
const HISTORY_PAGE = 20;
async function readHistory() {
  const mine = session;
  const kept = await qpStore.history(mine).catch(() => null);
  const headers = kept && kept.etag ? { 'If-None-Match': kept.etag } : {};
  const resp = await api(`/api/questions/history?limit=${HISTORY_PAGE}`, { headers });
  let past;
  if (resp.status === 304 && kept) {
    past = kept.questions;
  } else {
    if (!resp.ok) throw new Error(`server ${resp.status}`);
    past = (await resp.json()).questions;
    const etag = resp.headers.get('etag');
    if (etag) await qpStore.saveHistory(mine, { etag, questions: past }).catch(() => {});
  }
  for (const q of past) if (!questions.has(q.id)) questions.set(q.id, q);
  historyRead = true;
}

async function poll(signal) {
  const mine = session;
  await qpFlush(mine, (entry, outcome) => {
    if (!outcome.question) return;
    notes.delete(entry.question_id);   // a server failure said earlier is over
    questions.set(outcome.question.id, outcome.question);
    // The worker replaces the question's notification with its resolution.
    if ('serviceWorker' in navigator) {
      navigator.serviceWorker.ready.then((r) => r.active && r.active.postMessage({ type: 'decided', question: outcome.question }));
    }
  });
  // A failed history read (a server error, the network) does not stop the
  // feed: the wait goes on, and the next turn reads the history again.
  if (!historyRead) await readHistory().catch((e) => { if (session !== mine) throw e; });
  const since = feedVersion == null ? '' : `?since=${encodeURIComponent(feedVersion)}&timeout=${WAIT_SECS}`;
  const resp = await api(`/api/questions/pending/wait${since}`, { signal });
  if (!resp.ok) throw new Error(`server ${resp.status}`);
  const { questions: pending, version } = await resp.json();
  feedVersion = version;
  const ids = new Set(pending.map((q) => q.id));
  const fresh = pending.filter((q) => !questions.has(q.id));
  for (const q of pending) questions.set(q.id, q);
  // Questions that left the pending list were resolved: fetch how.
  for (const [id, q] of questions) {
    if (q.state === 'pending' && !ids.has(id)) {
      const r = await api(`/api/questions/${encodeURIComponent(id)}`);
      if (r.ok) questions.set(id, await r.json());
      else if (r.status === 404) questions.delete(id);
    }
  }
  $('net-status').textContent = navigator.onLine ? '' : t('web-offline');
  await render();
  // Kept only while this tab's session is the stored one (qpStore).
  if (session === mine) await qpStore.saveFeed(mine, [...questions.values()]).catch(() => {});
  if (fresh.length) announce(fresh);
}

// A question the service worker was pushed for this tab's account: drawn
// at once, as pushed, when the page does not have it yet; the feed's wait
// brings the server's copy, which replaces it (and says if it was resolved
// meanwhile).
async function pushed(q, userId) {
  if (!session || userId !== session.user.id || !q.id || questions.has(q.id)) return;
  questions.set(q.id, q);
  await render();
  announce([q]);
}

function announce(fresh) {
  const cells = JSON.parse(responder.feed(JSON.stringify(fresh), Date.now()));
  $('announce').textContent = cells.map((c) => responder.announce(c.title, c.prompt)).join(' ');
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

function answerButton(cell, b) {
  const btn = el('button', `answer style-${b.style}`, b.label);
  btn.type = 'button';
  btn.dir = 'auto';
  btn.addEventListener('click', () => answer(cell.question_id, `qp.v.${b.value}`, null));
  return btn;
}

// A stable id per control (question id + control): focus is kept by it
// across a redraw.
function controlId(kind, id, value) {
  return value == null ? `${kind}-${id}` : `${kind}-${id}-${encodeURIComponent(value).replace(/%/g, '_')}`;
}

function drawCell(cell, queued) { // queued: my answer waiting in the outbox, if any
  const li = el('li', `cell state-${cell.state}`);
  li.id = `cell-${cell.question_id}`;
  li.dataset.question = cell.question_id;
  li.tabIndex = -1; // focusable when opened at it (?q=, a notification)
  const art = el('article');
  art.setAttribute('aria-labelledby', `title-${cell.question_id}`);
  const head = el('h2', 'title', cell.title);
  head.id = `title-${cell.question_id}`;
  art.append(el('span', 'glyph', '?'), head);
  art.lastChild.previousSibling.setAttribute('aria-hidden', 'true');
  const prompt = el('p', 'prompt', cell.prompt);
  prompt.dir = 'auto';
  art.append(prompt);
  if (cell.context) {
    const c = el('p', 'context', cell.context);
    c.dir = 'auto';
    art.append(c);
  }
  const meta = el('p', 'meta');
  if (cell.room_name) {
    const room = el('span', 'room', cell.room_name);
    room.dir = 'auto';
    meta.append(room);
  }
  if (cell.time_remaining) meta.append(el('span', 'time', cell.time_remaining));
  if (cell.room_hint) meta.append(el('span', 'hint', cell.room_hint));
  art.append(meta);
  const open = cell.state === 'pending' && !queued;
  if (open && cell.buttons.length) {
    const row = el('div', 'buttons');
    for (const b of cell.buttons) {
      const btn = answerButton(cell, b);
      btn.id = controlId('answer', cell.question_id, b.value);
      row.append(btn);
    }
    art.append(row);
  }
  if (open && cell.choose) {
    const btn = el('button', 'choose', cell.choose.title);
    btn.type = 'button';
    btn.id = controlId('choose', cell.question_id);
    btn.setAttribute('aria-haspopup', 'dialog');
    btn.addEventListener('click', () => openSheet(cell, btn));
    const row = el('div', 'buttons');
    row.append(btn);
    art.append(row);
  }
  if (open && cell.text_field) {
    const f = cell.text_field;
    const form = el('form', 'reply');
    if (f.hint) form.append(el('p', 'or', f.hint));
    const input = el('input');
    input.type = 'text';
    input.dir = 'auto';
    input.placeholder = f.placeholder;
    input.setAttribute('aria-label', f.placeholder);
    // No maxlength: the browser counts UTF-16 units, the protocol counts
    // characters (qp-core says what is left, and refuses what is over).
    input.name = 'reply';
    input.id = controlId('reply', cell.question_id);
    input.value = drafts.get(cell.question_id) || '';
    const left = el('p', 'left');
    left.id = controlId('left', cell.question_id);
    input.setAttribute('aria-describedby', left.id);
    const count = () => {
      const r = JSON.parse(responder.replyLeft(JSON.stringify(questions.get(cell.question_id)), input.value));
      left.textContent = r.text;
      left.classList.toggle('over', r.left < 0);
      input.setAttribute('aria-invalid', r.left < 0 ? 'true' : 'false');
    };
    count();
    input.addEventListener('input', () => {
      drafts.set(cell.question_id, input.value);
      count();
    });
    const send = el('button', 'send', f.send_title);
    send.type = 'submit';
    send.id = controlId('send', cell.question_id);
    form.append(input, send, left);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      answer(cell.question_id, 'qp.text', input.value);
    });
    art.append(form);
  }
  if (cell.resolution) art.append(el('p', 'resolution', cell.resolution));
  const status = el('p', 'status');
  status.id = `status-${cell.question_id}`;
  status.setAttribute('role', 'status');
  if (notes.has(cell.question_id)) status.textContent = notes.get(cell.question_id);
  else if (queued) status.textContent = responder.queued(JSON.stringify(questions.get(cell.question_id)), queued.body);
  art.append(status);
  li.append(art);
  return li;
}

async function render() {
  const queued = new Map((await qpStore.queued()).map((e) => [e.question_id, e]));
  const cells = JSON.parse(responder.feed(JSON.stringify([...questions.values()]), Date.now()));
  const list = $('feed');
  // Nothing changed (the usual poll): nothing is rebuilt, so focus, the
  // caret and an open keyboard stay as they are.
  const key = JSON.stringify([cells, [...queued.keys()].sort(), [...notes]]);
  if (key !== drawn) {
    drawn = key;
    // Keep the focused control (by its stable id) and its caret across the redraw.
    const active = document.activeElement;
    const keep = active && active.id && list.contains(active)
      ? { id: active.id, start: active.selectionStart, end: active.selectionEnd } : null;
    list.replaceChildren(...cells.map((c) => drawCell(c, queued.get(c.question_id))));
    const again = keep && document.getElementById(keep.id);
    if (again) {
      again.focus({ preventScroll: true });
      if (keep.start != null && again.setSelectionRange) again.setSelectionRange(keep.start, keep.end);
    }
  }
  $('empty').hidden = cells.length > 0;
  openAt();
  if (sheetFor) {
    const c = cells.find((x) => x.question_id === sheetFor);
    if (!c || c.state !== 'pending') closeSheet();
    else $('sheet-time').textContent = c.choose.time_remaining;
  }
}

// Scrolls to and focuses the cell of the question asked for (?q=ID, or a
// notification tapped while the page was open), once it is in the feed.
function openAt() {
  if (!openFor) return;
  const li = document.getElementById(`cell-${openFor}`);
  if (!li) return;
  openFor = null;
  li.scrollIntoView({ block: 'center' });
  li.focus({ preventScroll: true });
}

function openSheet(cell, opener) {
  sheetFor = cell.question_id;
  $('sheet-title').textContent = cell.choose.title;
  $('sheet-prompt').textContent = cell.prompt;
  $('sheet-time').textContent = cell.choose.time_remaining;
  $('sheet-options').replaceChildren(...cell.choose.options.map((b) => {
    const btn = answerButton(cell, b);
    btn.addEventListener('click', closeSheet);
    return btn;
  }));
  $('sheet').dataset.opener = opener.id = controlId('choose', cell.question_id);
  $('sheet').showModal();
}

function closeSheet() {
  sheetFor = null;
  if ($('sheet').open) $('sheet').close();
}

async function answer(id, action, text) {
  const q = questions.get(id);
  if (!q) return;
  let body;
  notes.delete(id);
  try {
    body = responder.answer(JSON.stringify(q), action, text);
  } catch (reason) {
    notes.set(id, String(reason));
    await render();
    return;
  }
  const entry = { question_id: id, body, key: qpNewKey() };
  // The control answered with goes away in the redraw: focus moves to the
  // question's cell (which says how it ended), not to the page's body.
  const active = document.activeElement;
  const cell = document.getElementById(`cell-${id}`);
  const hadFocus = !!(cell && active && (cell.contains(active) || $('sheet').contains(active)));
  try {
    const outcome = await qpSubmit(session, entry);
    if (outcome.question) {
      questions.set(id, outcome.question);
      drafts.delete(id);
    }
    else notes.set(id, responder.notSent(JSON.stringify(q), body, outcome.error));
  } catch (e) {
    // It stays queued and is sent later. Unreachable: the cell says queued;
    // the server failing for now (5xx, 429) is said as such.
    if (e && e.status) notes.set(id, responder.notSent(JSON.stringify(q), body, e.status));
  }
  await render();
  const now = document.activeElement;
  if (hadFocus && (!now || now === document.body)) {
    const again = document.getElementById(`cell-${id}`);
    if (again) again.focus({ preventScroll: true });
  }
}

// ---- notifications (Web Push: push.js) -----------------------------------

// `result`: what enabling just said ({ok, reason | status}); without it, the
// subscription this browser has is registered again with the current token.
// "Notifications are on" only when the server took the registration; else
// why not, in the person's words (never the server's English).
async function offerNotifications(result) {
  const btn = $('notify');
  if (!self.qpWebPush || !self.qpWebPush.supported()) return;
  if (!result && await self.qpWebPush.serverOff().catch(() => false)) result = { ok: false, reason: 'off' };
  btn.hidden = false;
  if (!result) result = await self.qpWebPush.refresh(session.token).catch(() => ({ ok: false, reason: 'unreachable' }));
  const on = !!(result && result.ok) && await self.qpWebPush.state().catch(() => false);
  btn.textContent = t(on ? 'web-notifications-on' : 'web-notifications');
  btn.disabled = on;
  // Why not, when they could not be turned on: blocked by the person (or
  // their browser), the push service out of reach, or the server's refusal.
  let why = '';
  if (result && !result.ok) {
    if (result.reason === 'off') {
      // The server sends none: said, and nothing offered to turn on.
      btn.hidden = true;
      why = t('web-notifications-off-server');
    } else if (result.reason === 'blocked') why = t('web-notifications-blocked');
    else if (result.reason === 'unreachable') why = t('web-notifications-unreachable');
    else if (result.status) why = responder.notificationsRefused(result.status);
  }
  $('notify-status').textContent = why;
}

// ---- start ---------------------------------------------------------------

async function start() {
  await wasm_bindgen({ module_or_path: 'pkg/qp_web_bg.wasm' });
  session = (await qpStore.session()) || null;
  responder = new wasm_bindgen.Responder(Array.from(navigator.languages || [navigator.language]), session ? session.user.id : '');
  applyTexts();
  $('sign-out').addEventListener('click', signOut);
  $('sheet-close').addEventListener('click', closeSheet);
  $('pair-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    pair($('pair-code').value, $('pair-status'));
  });
  $('link-accept').addEventListener('click', acceptLink);
  $('link-cancel').addEventListener('click', cancelLink);
  $('notify').addEventListener('click', async () => {
    $('feed-note').textContent = '';
    $('notify-status').textContent = '';
    const result = await self.qpWebPush.enable(session.token)
      .catch(() => ({ ok: false, reason: 'unreachable' }));
    await offerNotifications(result);
  });
  // Closing the sheet (its button, Escape, an answer) returns focus to the
  // control that opened it, by id: the feed may have been redrawn since.
  $('sheet').addEventListener('close', () => {
    const opener = document.getElementById($('sheet').dataset.opener || '');
    if (opener) opener.focus();
  });
  window.addEventListener('online', refresh);
  window.addEventListener('offline', () => { $('net-status').textContent = t('web-offline'); });
  if ('serviceWorker' in navigator) {
    navigator.serviceWorker.register('sw.js', { scope: './' }).catch(() => {});
    navigator.serviceWorker.addEventListener('message', (ev) => {
      const m = ev.data || {};
      if (m.type === 'question' && m.question) {
        pushed(m.question, m.user_id).catch(() => {});
        return;
      }
      if (m.type === 'open' && m.question) openFor = m.question;
      refresh();
    });
  }
  // ?q=ID (a notification opened the app at that question): kept to focus
  // its cell once drawn, and taken out of the address bar.
  const q = new URLSearchParams(location.search).get('q');
  if (q) {
    openFor = q;
    history.replaceState(null, '', location.pathname + location.hash);
  }
  const code = codeFromUrl();
  if (code) {
    await openLink(code);
  } else if (session) {
    signedIn();
  } else {
    show('pair');
  }
  document.body.dataset.ready = '1';
}

start();
