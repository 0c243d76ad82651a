// Web Push on the page: asks for permission, subscribes with the server's
// VAPID key and registers this browser as a `web` device. The server checks
// the subscription (https endpoint of an allowed push service, key sizes).
'use strict';

function qpB64urlToBytes(s) {
  const b = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4));
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}

// The server's VAPID key, asked once per page: {public_key}, or {off: true}
// when the server has no Web Push (its 404), which the page says instead of
// asking the browser for a permission that could bring nothing. A failure
// to ask is not remembered.
let qpServerKey = null;
async function qpKeyOfServer() {
  if (!qpServerKey) {
    qpServerKey = fetch('/api/webpush/key', { credentials: 'omit' }).then(async (resp) => {
      if (resp.status === 404) return { off: true };
      if (!resp.ok) throw new Error(`server ${resp.status}`);
      return resp.json();
    });
    qpServerKey.catch(() => { qpServerKey = null; });
  }
  return qpServerKey;
}

self.qpWebPush = {
  supported: () => 'serviceWorker' in navigator && 'PushManager' in self && 'Notification' in self,
  // Whether this server sends no notifications at all (true only when it
  // said so).
  async serverOff() {
    return !!(await qpKeyOfServer()).off;
  },
  async state() {
    const reg = await navigator.serviceWorker.ready;
    return !!(await reg.pushManager.getSubscription());
  },
  // On every start with a subscription: subscribed with the server's
  // current key (after a rotation, the old subscription is replaced), and
  // registered again with the current token (a new pairing of the same
  // person revoked the old one, and the device with it; a pairing of
  // another person ended the subscription before it signed in). Returns
  // {ok, reason | status} as enable does, or null when there is nothing to
  // register.
  async refresh(token) {
    if (Notification.permission !== 'granted') return null;
    const reg = await navigator.serviceWorker.ready;
    let sub = await reg.pushManager.getSubscription();
    if (!sub) return null;
    const key = await qpKeyOfServer();
    if (key.off) return { ok: false, reason: 'off' };
    const have = btoa(String.fromCharCode(...new Uint8Array(sub.options.applicationServerKey || [])))
      .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    if (have !== key.public_key) {
      await sub.unsubscribe();
      return this.enable(token);
    }
    return this.register(token, sub);
  },
  // {ok: true}, or {ok: false, reason: 'off'} (the server has no Web Push:
  // nothing is asked of the browser), {ok: false, reason: 'blocked'} (permission denied or
  // dismissed), {ok: false, reason: 'unreachable'} (the push service could
  // not subscribe: offline, or the browser has none), {ok: false, status:
  // the server's HTTP status when it refused the registration}. The page
  // says which, and does not say notifications are on.
  async enable(token) {
    const key = await qpKeyOfServer();
    if (key.off) return { ok: false, reason: 'off' };
    if ((await Notification.requestPermission()) !== 'granted') return { ok: false, reason: 'blocked' };
    const reg = await navigator.serviceWorker.ready;
    let sub;
    try {
      sub = await reg.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: qpB64urlToBytes(key.public_key),
      });
    } catch (e) {
      return { ok: false, reason: e && e.name === 'NotAllowedError' ? 'blocked' : 'unreachable' };
    }
    return this.register(token, sub);
  },
  async register(token, sub) {
    const resp = await fetch('/api/devices', {
      method: 'POST',
      headers: { 'Authorization': `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        platform: 'web',
        push_token: JSON.stringify(sub.toJSON()),
        app_id: location.origin,
        locale: document.documentElement.lang,
      }),
      credentials: 'omit',
    });
    if (resp.ok) return { ok: true };
    return { ok: false, status: resp.status };
  },
  // Ends this browser's subscription (its push service forgets it): on
  // sign-out, and before another account signs in here, so a subscription
  // is never moved from one person to another. True when there was one.
  // Never waits for a worker that is not registered.
  async unsubscribe() {
    if (!('serviceWorker' in navigator)) return false;
    const reg = await navigator.serviceWorker.getRegistration();
    const sub = reg && reg.pushManager && await reg.pushManager.getSubscription();
    if (!sub) return false;
    await sub.unsubscribe();
    return true;
  },
};
