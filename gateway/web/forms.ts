// Form input of the keys page, checked here for a friendly message; the engine's createKey
// checks the name again, since it is the rule the CLI shares (shared/key-name.ts).
import { UNPRINTABLE } from '../../shared/key-name.js';

const MAX_NAME = 100;
const DAY_MS = 86_400_000;

/** YYYY-MM-DD of a time, in UTC. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The first date an expiry may take: tomorrow (UTC), so a new key is never born expired. */
export function minExpiryDate(now: number): string {
  return utcDate(now + DAY_MS);
}

export type KeyForm = { ok: true; name: string; expiresAt: number | null } | { ok: false; error: string };

export function parseKeyForm(body: Record<string, unknown>, now: number): KeyForm {
  const name = typeof body.name === 'string' ? body.name.trim() : '';
  if (!name) return { ok: false, error: 'Give the key a name, such as the program or machine that will use it.' };
  if (name.length > MAX_NAME) return { ok: false, error: `The name is at most ${MAX_NAME} characters long.` };
  if (UNPRINTABLE.test(name))
    return {
      ok: false,
      error: 'The name must be printable text: no control characters, line breaks or direction marks.',
    };
  const expires = typeof body.expires === 'string' ? body.expires.trim() : '';
  if (!expires) return { ok: true, name, expiresAt: null };
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(expires);
  const at = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : NaN;
  // A round trip rejects dates that Date.UTC would roll over, such as 2027-02-30.
  if (!m || Number.isNaN(at) || utcDate(at) !== expires)
    return { ok: false, error: 'The expiry must be a date of the form YYYY-MM-DD.' };
  if (expires < minExpiryDate(now))
    return { ok: false, error: `The expiry date must be ${minExpiryDate(now)} or later.` };
  return { ok: true, name, expiresAt: at };
}

/** Where to go after signing in: only our own pages, so the parameter cannot redirect elsewhere. */
export function safeNext(value: unknown, fallback = '/keys'): string {
  if (value === '/apidocs' || value === '/keys') return value;
  // Back to the reading page the visitor asked for (a bookmarked search or message): these paths
  // only, without backslashes or white space, so it still cannot lead off-site.
  if (
    typeof value === 'string' &&
    /^\/(?:search(?:\/export)?(?:\?|$)|emails\/\d{1,10}(?:[/?]|$))/.test(value) &&
    value.length <= 8192 &&
    !/[\\\s]/.test(value)
  )
    return value;
  // Back to an OAuth authorization request (gateway/oauth/authorize.ts): always this path, so
  // the parameter still cannot lead off-site; the request itself is checked again there.
  if (
    typeof value === 'string' &&
    value.startsWith('/oauth/authorize?') &&
    value.length <= 8192 &&
    !/[\\\s]/.test(value)
  )
    return value;
  return fallback;
}
