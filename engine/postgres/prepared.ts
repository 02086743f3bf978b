// Statements prepared once per connection and then only executed (reused() in sql.ts), shared
// by the two ways this store sends them: one statement on a pool (store.ts) and a snapshot
// session's multi-statement messages (snapshot-session.ts). Parsing and planning a short
// statement costs the server several times what executing it does (the key lookup every request
// makes: 0.27 ms of 0.30, measured at 100,000 messages under the benchmark's load).

import { createHash } from 'node:crypto';

/**
 * A statement's server-side name: the same text gets the same name on every connection. The two
 * senders use two prefixes: pg's driver prepares by protocol message and knows only its own names.
 */
export const preparedName = (text: string, prefix: 'mag' | 'magq' = 'mag') =>
  `${prefix}_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;

/** 26000, invalid_sql_statement_name: "prepared statement ... does not exist". */
export const missingPrepared = (err: unknown) => (err as { code?: unknown } | null)?.code === '26000';

let off = false;

/**
 * False once a prepared name was not found on the connection that prepared it: a pooler between
 * this service and the server (PgBouncer in transaction mode) hands each transaction another
 * server connection. From then on this thread sends every statement as text.
 */
export const preparing = () => !off;

export function stopPreparing(): void {
  off = true;
}
