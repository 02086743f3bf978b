// Prepared statements, kept per connection. better-sqlite3 compiles SQL on every prepare();
// each worker thread has one long-lived connection, so the read paths ask here instead and
// compile each distinct SQL text once per thread.
import type { Statement } from 'better-sqlite3';
import type { Db } from './open.js';

const caches = new WeakMap<Db, Map<string, Statement>>();
/** Distinct SQL texts kept per connection; search builds a bounded set of shapes. */
const LIMIT = 500;

export function prepared(db: Db, sql: string): Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let statement = cache.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    cache.set(sql, statement);
    if (cache.size > LIMIT) cache.delete(cache.keys().next().value!);
  } else if (statement.reader) {
    statement.pluck(false); // a caller may have switched it on; each use starts from rows
  }
  return statement;
}
