// The browser's storage for the web responder, shared by the page and the
// service worker (same origin): the session (token, user), the feed last
// shown and the outbox of answers made offline. IndexedDB, not localStorage: a service worker can
// read it, and no other origin can. Nothing here decides what to show.
'use strict';

const QP_DB = 'qp';

function qpOpen() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(QP_DB, 1);
    req.onupgradeneeded = () => {
      req.result.createObjectStore('session');
      // Keyed by question id: one answer per question waits at most.
      req.result.createObjectStore('outbox', { keyPath: 'question_id' });
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function qpTx(store, mode, fn) {
  const db = await qpOpen();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(store, mode);
    const result = fn(tx.objectStore(store));
    tx.oncomplete = () => resolve(result && 'result' in result ? result.result : undefined);
    tx.onerror = () => reject(tx.error);
  });
}

// `fn(tx, done)` in one transaction over `stores`: what it passes to
// `done` is the result, once the transaction has committed. Reading the
// session and writing beside it in one transaction is what keeps two tabs
// apart: no other tab's sign-in can come between the check and the write.
async function qpTxWith(stores, fn) {
  const db = await qpOpen();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(stores, 'readwrite');
    let result;
    fn(tx, (r) => { result = r; });
    tx.oncomplete = () => resolve(result);
    tx.onerror = () => reject(tx.error);
  });
}

// Puts `value` under `key` only while the stored session is `session`
// (the same token): a tab still showing an account another tab has
// replaced writes nothing into the new account's store. True when written.
function qpPutForSession(session, key, value) {
  return qpTxWith('session', (tx, done) => {
    const s = tx.objectStore('session');
    const req = s.get('session');
    req.onsuccess = () => {
      const mine = !!(session && req.result && req.result.token === session.token);
      if (mine) s.put(value, key);
      done(mine);
    };
  });
}

// What is kept beside a session is keyed by its account: another account's
// copy is never read as this one's.
const qpKey = (what, session) => `${what}:${session.user.id}`;

const qpStore = {
  session: () => qpTx('session', 'readonly', (s) => s.get('session')),
  saveSession: (session) => qpTx('session', 'readwrite', (s) => s.put(session, 'session')),
  // The questions the feed last drew, so a page opened offline shows what
  // it knew. Beside the session, and cleared with it.
  feed: (session) => qpTx('session', 'readonly', (s) => s.get(qpKey('feed', session))),
  saveFeed: (session, list) => qpPutForSession(session, qpKey('feed', session), list),
  // The first page of the person's history and its ETag: a reload asks
  // with it and gets a bodiless 304 while the page is the same.
  history: (session) => qpTx('session', 'readonly', (s) => s.get(qpKey('history', session))),
  saveHistory: (session, page) => qpPutForSession(session, qpKey('history', session), page),
  // Everything, whoever's: a pairing that changes the account.
  clear: () => Promise.all([
    qpTx('session', 'readwrite', (s) => s.clear()),
    qpTx('outbox', 'readwrite', (s) => s.clear()),
  ]),
  // What the session of `token` kept, and only while it is still the
  // stored one: a 401 in one tab never clears the sign-in another tab made
  // since. True when cleared (nothing stored counts as cleared).
  clearSession: (token) => qpTxWith(['session', 'outbox'], (tx, done) => {
    const s = tx.objectStore('session');
    const req = s.get('session');
    req.onsuccess = () => {
      const mine = !req.result || req.result.token === token;
      if (mine) {
        s.clear();
        tx.objectStore('outbox').clear();
      }
      done(mine);
    };
  }),
  queued: () => qpTx('outbox', 'readonly', (s) => s.getAll()),
  // Queues an answer of `session`'s account, marked with it, only while
  // that session is the stored one (one transaction, as qpPutForSession):
  // a tab still showing an account another tab replaced queues nothing the
  // new account's flush could send. True when queued.
  queue: (session, entry) => qpTxWith(['session', 'outbox'], (tx, done) => {
    const req = tx.objectStore('session').get('session');
    req.onsuccess = () => {
      const mine = !!(session && req.result && req.result.token === session.token);
      if (mine) tx.objectStore('outbox').put({ ...entry, user_id: session.user.id });
      done(mine);
    };
  }),
  unqueue: (id) => qpTx('outbox', 'readwrite', (s) => s.delete(id)),
};

// Sends an answer. The Idempotency-Key is the entry's own, so a retry after
// a lost response is the same answer, counted once by the server. Returns
// {question} when the server decided (200, or 409 with the question as it
// stands), {error} when it refused for good (4xx), and throws when it could
// not be reached or failed for now (5xx, 429: the error's `status`); the
// caller keeps the entry for later.
async function qpSend(token, entry) {
  const resp = await fetch(`/api/questions/${encodeURIComponent(entry.question_id)}/answer`, {
    method: 'POST',
    headers: {
      'Authorization': `Bearer ${token}`,
      'Content-Type': 'application/json',
      'Idempotency-Key': entry.key,
    },
    body: entry.body,
    credentials: 'omit',
    cache: 'no-store',
  });
  if (resp.status >= 500 || resp.status === 429) {
    // Kept for later like a network failure, but the page says the server
    // failed (with `status`), not that it is offline.
    const e = new Error(`server ${resp.status}`);
    e.status = resp.status;
    throw e;
  }
  const json = await resp.json().catch(() => ({}));
  if (resp.ok) return { question: json };
  if (resp.status === 409) return { question: json.question || json };
  return { error: resp.status };
}

// The outbox's sends, one at a time across the page and the service worker
// (Web Locks), so an entry is never sent twice by two of them at once.
function qpLocked(fn) {
  return navigator.locks ? navigator.locks.request('qp-outbox', fn) : fn();
}

// An answer of `session`'s account: queued first, then sent; it stays
// queued when the server cannot be reached (the send throws), to go once
// the connection returns. When `session` is no longer the stored one (another
// tab signed in since), nothing is queued or sent: {error: 401}.
function qpSubmit(session, entry) {
  return qpLocked(async () => {
    if (!(await qpStore.queue(session, entry))) return { error: 401 };
    const outcome = await qpSend(session.token, entry);
    await qpStore.unqueue(entry.question_id);
    return outcome;
  });
}

// Sends what waits in the outbox, each once: an entry leaves the outbox when
// the server has decided on it, and stays when the network failed. Only
// `session`'s account's entries are sent, with its token; another
// account's is kept aside (a stale tab's flush must not drop the new
// account's). An unmarked entry was queued by an earlier version of this
// page, which kept one sign-in for every tab and flushed with it: it is the
// stored session's, and goes only when `session` is that stored one.
function qpFlush(session, onDecided) {
  return qpLocked(async () => {
    const stored = await qpStore.session();
    const isStored = !!(session && stored && stored.token === session.token);
    for (const entry of await qpStore.queued()) {
      if (!session || !session.user) continue;
      if (entry.user_id ? entry.user_id !== session.user.id : !isStored) continue;
      let outcome;
      try {
        outcome = await qpSend(session.token, entry);
      } catch (e) {
        return false;
      }
      await qpStore.unqueue(entry.question_id);
      if (onDecided) await onDecided(entry, outcome);
    }
    return true;
  });
}

function qpNewKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return 'web-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
