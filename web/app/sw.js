// The web responder's service worker: shows a pushed question with its
// buttons, answers from a button without opening the app, replaces the
// notification with the resolution (tag = question id), and keeps an answer
// made offline until it can be sent, once. What a notification says and
// whether an answer may be sent come from qp-core (WebAssembly), as on the
// page.
'use strict';

importScripts('pkg/qp_web.js', 'store.js');

let wasmReady = null;
async function responder() {
  if (!wasmReady) wasmReady = wasm_bindgen({ module_or_path: 'pkg/qp_web_bg.wasm' });
  await wasmReady;
  const session = await qpStore.session();
  const r = new wasm_bindgen.Responder(Array.from(navigator.languages || [navigator.language]), session ? session.user.id : '');
  return { r, session };
}

function maxActions() {
  return (self.Notification && Notification.maxActions) || 0;
}

// Open pages hear of every push at once, before their long-poll returns:
// a question comes with it (drawn as pushed until the server's list has
// it); anything else has them read the list again.
async function tellPages(question, userId) {
  const message = question ? { type: 'question', question, user_id: userId } : { type: 'changed' };
  for (const c of await self.clients.matchAll({ type: 'window' })) c.postMessage(message);
}

function show(n, data, silent) {
  return self.registration.showNotification(n.title, {
    body: n.body,
    tag: n.tag,
    actions: n.actions.map((a) => ({ action: a.action, title: a.title })),
    requireInteraction: n.require_interaction,
    renotify: false,
    silent: !!silent,
    timestamp: n.timestamp || undefined,
    icon: 'icon-192.png',
    data,
  });
}

// The notification with this tag (the question's), if one is showing.
async function shown(tag) {
  const all = await self.registration.getNotifications({ tag });
  return all.find((n) => n.tag === tag) || null;
}

// Replaces (or shows, when none is showing) the question's notification
// with its resolution, quietly: it tells, it does not ring.
async function replaceWithResolution(r, resolved, question) {
  await show(JSON.parse(r.resolved(JSON.stringify(resolved), JSON.stringify(question))), { resolved: true }, true);
}

// "Open the app" (qp-core's words): for a push this worker cannot show as
// a question or a resolution. Every push shows a notification: a browser
// shows its own notice for a silent one, and Safari revokes the
// subscription of a worker that shows none.
async function showFallback(r, tag, silent) {
  const f = JSON.parse(r.fallback());
  await show({ title: f.title, body: f.body, tag: tag || 'qp.fallback', actions: [], require_interaction: false, timestamp: 0 },
    { opens_app: true }, silent);
}

// The question as the server has it now (for a resolution pushed while its
// notification is not showing), or null.
async function fetchQuestion(session, id) {
  if (!session) return null;
  try {
    const resp = await fetch(`/api/questions/${encodeURIComponent(id)}`, {
      headers: { 'Authorization': `Bearer ${session.token}` }, credentials: 'omit', cache: 'no-store',
    });
    return resp.ok ? await resp.json() : null;
  } catch (e) {
    return null;
  }
}

// The app's shell, cached so the page opens without the network and a
// reload downloads none of it. The server stamps the shell's version (a
// digest of every other file of the app) into this file at build time: a
// new build is a new worker, which caches the new shell and drops the old.
// The page is one load behind an upgrade (the old worker serves the load
// that installs the new one). The API is never cached here.
const SHELL = 'qp-shell-@QP_SHELL_VERSION@';
const SHELL_FILES = [
  './', 'style.css', 'pkg/qp_web.js', 'pkg/qp_web_bg.wasm', 'store.js', 'push.js', 'app.js',
  'manifest.webmanifest', 'icon.svg', 'icon-192.png',
];

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(SHELL);
    await cache.addAll(SHELL_FILES);
    await self.skipWaiting();
  })());
});
self.addEventListener('activate', (event) => event.waitUntil((async () => {
  for (const name of await caches.keys()) {
    if (name.startsWith('qp-shell-') && name !== SHELL) await caches.delete(name);
  }
  await self.clients.claim();
})()));

// The shell from the cache (a page of the app, whatever its query, is the
// shell's page); anything else, the API first of all, from the network.
self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  const scope = new URL(self.registration.scope);
  if (url.origin !== scope.origin || !url.pathname.startsWith(scope.pathname)) return;
  const navigation = req.mode === 'navigate';
  event.respondWith((async () => {
    const cache = await caches.open(SHELL);
    const hit = await cache.match(navigation ? './' : req, { ignoreSearch: navigation });
    return hit || fetch(req);
  })());
});

self.addEventListener('push', (event) => {
  event.waitUntil((async () => {
    const { r, session } = await responder();
    const text = event.data ? event.data.text() : '';
    let out;
    try {
      out = JSON.parse(r.push(text, maxActions()));
    } catch (e) {
      // Not a payload this worker can read: "open the app".
      await showFallback(r);
      await tellPages();
      return;
    }
    if (out.kind === 'question') {
      // For the account signed in when it came: a tab still showing
      // another account does not draw it.
      await tellPages(out.pending, session && session.user.id);
      await show(out.notification, { question: out.question, opens_app: out.notification.opens_app, user_id: session && session.user.id });
      return;
    } else {
      // Always shown, under the question's tag, replacing any: from the
      // question showing, else from the server's.
      const n = await shown(out.notice.id);
      const q = (n && n.data && n.data.question) || await fetchQuestion(session, out.notice.id);
      let done = false;
      if (q) {
        try {
          await replaceWithResolution(r, out.notice, q);
          done = true;
        } catch (e) { /* unreadable: the fallback below */ }
      }
      if (!done) await showFallback(r, out.notice.id, true);
    }
    await tellPages();
  })());
});

async function answerFromButton(event) {
  const n = event.notification;
  const question = n.data && n.data.question;
  const { r, session } = await responder();
  if (!question || !session) return openApp(question && question.id);
  // Shown for another account than the one signed in now: never answered
  // with this one's token; the app opens instead.
  if (n.data.user_id !== session.user.id) return openApp(question.id);
  let body;
  try {
    body = r.answer(JSON.stringify(question), event.action, null);
  } catch (e) {
    return openApp(question.id);
  }
  const entry = { question_id: question.id, body, key: qpNewKey() };
  let outcome;
  try {
    outcome = await qpSubmit(session, entry);
  } catch (e) {
    // Offline: kept, and said so under the question's tag; sent once when
    // the connection returns (background sync, or the page when it opens).
    const words = JSON.parse(r.queuedNotification(JSON.stringify(question), body));
    await show({
      tag: question.id, title: words.title, body: words.body,
      actions: [], require_interaction: false, timestamp: 0,
    }, { question, queued: true, user_id: session.user.id });
    if (self.registration.sync) await self.registration.sync.register('qp-outbox').catch(() => {});
    return;
  }
  if (outcome.question) await replaceWithResolution(r, outcome.question, question);
  await tellPages();
}

async function openApp(id) {
  const url = new URL(id ? `./?q=${encodeURIComponent(id)}` : './', self.registration.scope).href;
  const pages = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const c of pages) {
    if (c.url.startsWith(self.registration.scope) && 'focus' in c) {
      await c.focus();
      c.postMessage({ type: 'open', question: id });
      return;
    }
  }
  if (self.clients.openWindow) await self.clients.openWindow(url);
}

self.addEventListener('notificationclick', (event) => {
  const q = event.notification.data && event.notification.data.question;
  if (event.action && event.action.startsWith('qp.v.')) {
    event.notification.close();
    event.waitUntil(answerFromButton(event));
  } else {
    event.notification.close();
    event.waitUntil(openApp(q && q.id));
  }
});

async function flush() {
  const { r, session } = await responder();
  if (!session) return;
  await qpFlush(session, async (entry, outcome) => {
    const n = await shown(entry.question_id);
    if (outcome.question && n && n.data && n.data.question) {
      await replaceWithResolution(r, outcome.question, n.data.question);
    }
  });
  await tellPages();
}

self.addEventListener('sync', (event) => {
  if (event.tag === 'qp-outbox') event.waitUntil(flush());
});

// The page sent an answer from the outbox: the notification, if one is
// showing, becomes the resolution.
async function decided(question) {
  const { r } = await responder();
  const n = await shown(question.id);
  if (n && n.data && n.data.question) await replaceWithResolution(r, question, n.data.question);
}

self.addEventListener('message', (event) => {
  const m = event.data || {};
  if (m.type === 'flush') event.waitUntil(flush());
  if (m.type === 'decided' && m.question) event.waitUntil(decided(m.question));
});
