import test from 'ava';
import { startDovecot } from './helpers/dovecot.js';

test('starts', async (t) => {
  const s = await startDovecot({}, t);
  t.log(s.startMs, s.port, s.tlsPort);
  t.true(s.running());
});
