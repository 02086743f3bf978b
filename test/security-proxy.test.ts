// Hardening (docs/security.md, items 2 and 9): behind a proxy the client address is the
// one the proxy appended, never what the client wrote to the left of it; and wrong passwords from
// one address do not lock a user out of the web page for everyone else.
import test from 'ava';
import { bearer, startApi } from './helpers/api.js';
import { readAccessLog } from './helpers/store.js';
import { pino } from 'pino';
import { LoginThrottle } from '../gateway/web/throttle.js';
import { defaultSettings } from '../shared/config.js';

test('X-Forwarded-For: the entry our proxy appended counts (Server:TrustedProxyHops), not the spoofable left', async (t) => {
  const api = await startApi({ Api: { RateLimitPerMinute: 2 }, Server: { TrustProxy: true } });
  t.teardown(() => api.close());
  const key = api.fixture.keys.admin;
  // The client writes a different left-most address each time; the proxy appends 203.0.113.9.
  const statuses: number[] = [];
  for (const spoof of ['1.1.1.1', '2.2.2.2', '3.3.3.3']) {
    const res = await api.request
      .get('/api/v1/emails?q=budget')
      .set('X-Forwarded-For', `${spoof}, 203.0.113.9`)
      .set(bearer(key));
    statuses.push(res.status);
  }
  t.deepEqual(statuses, [200, 200, 429], 'one client, one budget, whatever it writes on the left');
  // Without a key the budget is the address's: spoofing the left does not buy a fresh one.
  const anon: number[] = [];
  for (const spoof of ['4.4.4.4', '5.5.5.5', '6.6.6.6'])
    anon.push((await api.request.get('/api/v1/accounts').set('X-Forwarded-For', `${spoof}, 198.51.100.7`)).status);
  t.deepEqual(anon, [401, 401, 429]);
  await api.gateway.accessLog.flush();
  const logged = (await readAccessLog(api.settings.Database.Path)).map((r) => r.client_ip);
  t.deepEqual([...new Set(logged)], ['203.0.113.9'], 'the access log records the proxied address');

  // Two proxies in front: the second entry from the right is the client.
  const two = await startApi({ Api: { RateLimitPerMinute: 100 }, Server: { TrustProxy: true, TrustedProxyHops: 2 } });
  t.teardown(() => two.close());
  await two.request
    .get('/api/v1/emails?q=x')
    .set('X-Forwarded-For', '9.9.9.9, 192.0.2.44, 10.0.0.2')
    .set(bearer(two.fixture.keys.admin));
  await two.gateway.accessLog.flush();
  t.deepEqual(
    (await readAccessLog(two.settings.Database.Path)).map((r) => r.client_ip),
    ['192.0.2.44'],
  );
});

test('five wrong passwords from one address do not lock the user out from another; a spray over many addresses is capped', async (t) => {
  // The sign-in throttle the web page uses (its 429 page is tested in web-login.test.ts); with the
  // default 5 per username and address, and a per-username cap of 12 here.
  const settings = defaultSettings({ Web: { LoginAttemptsPerUserAllAddressesPerMinute: 12 } });
  const throttle = new LoginThrottle(settings, pino({ level: 'silent' }));
  for (let i = 0; i < 5; i++) t.is(await throttle.attempt('198.51.100.66', 'bob'), null);
  t.true((await throttle.attempt('198.51.100.66', 'Bob'))! > 0, 'the guessing address is throttled (any case)');
  t.is(await throttle.attempt('192.0.2.10', 'bob'), null, 'bob still signs in from his own address');
  // Spread over addresses, the per-username cap still stops a spray. 6 attempts on bob have
  // counted so far (the throttled one did not reach the per-username window).
  const spray: Array<number | null> = [];
  for (let i = 0; i < 7; i++) spray.push(await throttle.attempt(`203.0.113.${i + 1}`, 'bob'));
  t.deepEqual(spray.slice(0, 6), [null, null, null, null, null, null]);
  t.true(spray[6]! > 0, 'the 13th attempt on bob this minute is refused');
  t.is(await throttle.attempt('203.0.113.50', 'alice'), null, 'other users are untouched');
});
