// The group columns of aggregates over a SQLite archive (aggregate.ts): per grouping, the group
// number of every message by id (or, for `to`, a list of them per message). Reading them is one
// pass over the emails table, seconds at 300,000 messages (docs/performance.md, "Aggregates"):
// the builder thread (index-builder.ts) reads them once after each snapshot and posts them in
// shared memory on a channel of their own, so a query thread's first aggregate finds them ready;
// a thread still builds or extends its own when the posted ones do not cover its snapshot.
import { BroadcastChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { fromAddress, toAddresses } from '../rules/aggregate.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';
import type { Snapshot } from '../search/bitsets/snapshot.js';

/** Group numbers by message id (-1: in no group), or for `to` a list of them per message. */
export interface Column {
  rewrites: number;
  /** Messages up to this id are in the column. */
  maxId: number;
  keys: string[];
  /** key -> group number; left out of posted columns (made again when one is extended). */
  numbers?: Map<string, number>;
  /** by id: the group number (single-valued groupings)... */
  of: Int32Array;
  /** ...or for `to`: the groups of id are members[starts[id] .. starts[id + 1]). */
  starts?: Int32Array;
  members?: Int32Array;
  memberCount: number;
}

export const COLUMN_KINDS = ['from', 'to', 'folder', 'account', 'hasAttachments'] as const;
export type ColumnKind = (typeof COLUMN_KINDS)[number];

/** What each column is read from, and how a row becomes its group keys. */
const SOURCES: Record<ColumnKind, { column: string; keys: (value: unknown) => string[] }> = {
  from: { column: 'from_addr', keys: (v) => single(fromAddress(v as string | null)) },
  to: { column: 'to_addr', keys: (v) => toAddresses(v as string | null) },
  folder: { column: 'folder', keys: (v) => [v as string] },
  account: { column: 'account_id', keys: (v) => [String(v)] },
  hasAttachments: { column: 'has_attachments', keys: (v) => [v ? 'true' : 'false'] },
};
const single = (key: string | null) => (key === null ? [] : [key]);

function grow<T extends Int32Array>(array: T, size: number, fill: number): Int32Array {
  if (array.length >= size) return array;
  const out = new Int32Array(Math.max(size, Math.ceil(array.length * 1.5))).fill(fill);
  out.set(array);
  return out;
}

function emptyColumn(kind: ColumnKind, rewrites: number): Column {
  const col: Column = { rewrites, maxId: 0, keys: [], numbers: new Map(), of: new Int32Array(0), memberCount: 0 };
  if (kind === 'to') {
    col.starts = new Int32Array(1);
    col.members = new Int32Array(0);
  }
  return col;
}

/** A private copy of a posted column, to extend without touching the shared one. */
function ownCopy(col: Column): Column {
  return {
    rewrites: col.rewrites,
    maxId: col.maxId,
    keys: [...col.keys],
    numbers: new Map(col.keys.map((k, i) => [k, i])),
    of: new Int32Array(col.of),
    ...(col.starts ? { starts: new Int32Array(col.starts), members: new Int32Array(col.members!) } : {}),
    memberCount: col.memberCount,
  };
}

/** Adds the messages above col.maxId up to `maxId` (one read of the emails table). */
function extend(db: Db, col: Column, kind: ColumnKind, maxId: number): void {
  if (col.maxId >= maxId) return;
  const { column, keys: keysOf } = SOURCES[kind];
  const numbers = (col.numbers ??= new Map(col.keys.map((k, i) => [k, i])));
  const numberOf = (key: string) => {
    let n = numbers.get(key);
    if (n === undefined) {
      n = col.keys.push(key) - 1;
      numbers.set(key, n);
    }
    return n;
  };
  const rows = prepared(db, `SELECT id, ${column} FROM emails WHERE id > ? AND id <= ? ORDER BY id`)
    .raw()
    .iterate(col.maxId, maxId) as IterableIterator<[number, unknown]>;
  if (kind === 'to') {
    const starts = grow(col.starts!, maxId + 2, 0);
    let members = col.members!;
    let count = col.memberCount;
    let next = col.maxId + 1; // the first id whose start is not set yet
    for (const [id, value] of rows) {
      for (; next <= id; next++) starts[next] = count;
      for (const key of keysOf(value)) {
        if (count >= members.length) members = grow(members, count + 1, 0);
        members[count++] = numberOf(key);
      }
    }
    for (; next <= maxId + 1; next++) starts[next] = count;
    Object.assign(col, { starts, members, memberCount: count });
  } else {
    const of = grow(col.of, maxId + 1, -1);
    for (const [id, value] of rows) of[id] = keysOf(value).map(numberOf)[0] ?? -1;
    col.of = of;
  }
  col.maxId = maxId;
}

/** Whether `col` gives every message of `snap` its group: no rewrite since, and far enough. */
const covers = (col: Column | undefined, snap: Pick<Snapshot, 'rewrites' | 'maxId'>) =>
  col !== undefined && col.rewrites === snap.rewrites && col.maxId >= snap.maxId;

// ---- In a query thread ----------------------------------------------------------------------

const own = new WeakMap<Db, Map<ColumnKind, Column>>();

/**
 * The column of `kind` covering every message of `snap`: the builder's when it covers it (the
 * usual case: posted right after the snapshot), else this thread's own, extended from the nearest start (its own, a copy of the builder's, or
 * nothing) by the messages appended since, rebuilt after a rewrite.
 */
export function columnFor(db: Db, snap: Snapshot, kind: ColumnKind): Column {
  let cache = own.get(db);
  if (!cache) own.set(db, (cache = new Map()));
  const posted = postedColumn(db, kind);
  if (covers(posted, snap)) {
    cache.delete(kind); // this thread's own is not needed any more
    return posted!;
  }
  const local = cache.get(kind);
  if (local && local.rewrites === snap.rewrites && local.maxId === snap.maxId) return local;
  const usable = (col: Column | undefined) => col && col.rewrites === snap.rewrites && col.maxId <= snap.maxId;
  let col: Column;
  if (usable(local) && (!usable(posted) || local!.maxId >= posted!.maxId)) col = local!;
  else if (usable(posted)) col = ownCopy(posted!);
  else col = emptyColumn(kind, snap.rewrites);
  extend(db, col, kind, snap.maxId);
  cache.set(kind, col);
  return col;
}

/** A posted column (the builder's, its arrays in shared memory), or a thread asking for them. */
type ColumnMessage = { kind: ColumnKind; column: Column } | { hello: true };
const followers = new WeakMap<Db, { bc: BroadcastChannel; latest: Map<ColumnKind, Column> }>();

/** The channel the builder posts the columns of the pool whose snapshots come on `channel`. */
const columnChannel = (channel: string) => `${channel}:columns`;

/** Follows the builder's columns for the life of this thread (beside bitsets/share.ts followSnapshots). */
export function followColumns(db: Db, channel: string): void {
  const bc = new BroadcastChannel(columnChannel(channel));
  const latest = new Map<ColumnKind, Column>();
  bc.onmessage = (event) => take(latest, (event as { data: ColumnMessage }).data);
  bc.unref();
  followers.set(db, { bc, latest });
  bc.postMessage({ hello: true } satisfies ColumnMessage); // a thread started later gets the current ones
}

function take(latest: Map<ColumnKind, Column>, message: ColumnMessage): void {
  if (message && 'kind' in message && COLUMN_KINDS.includes(message.kind)) latest.set(message.kind, message.column);
}

function postedColumn(db: Db, kind: ColumnKind): Column | undefined {
  const follower = followers.get(db);
  if (!follower) return undefined;
  // Idle Piscina threads wait on Atomics, not in the event loop: take what is waiting (share.ts).
  const port = follower.bc as unknown as MessagePort;
  for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port))
    take(follower.latest, m.message as ColumnMessage);
  return follower.latest.get(kind);
}

// ---- In the builder thread ------------------------------------------------------------------

/** `array` in shared memory, cut to `length`. */
function shared(array: Int32Array, length: number): Int32Array {
  const out = new Int32Array(new SharedArrayBuffer(length * 4));
  out.set(array.subarray(0, length));
  return out;
}

/**
 * The builder's side: keeps every column current with the snapshot it has just posted and posts
 * them (a fresh shared copy each time, so a thread reading the previous one is never disturbed).
 */
export class ColumnPoster {
  readonly #bc: BroadcastChannel;
  readonly #columns = new Map<ColumnKind, Column>();
  readonly #posted = new Map<ColumnKind, Column>();

  constructor(
    readonly db: Db,
    channel: string,
  ) {
    this.#bc = new BroadcastChannel(columnChannel(channel));
    this.#bc.onmessage = (event) => {
      if ('hello' in (event as { data: ColumnMessage }).data)
        for (const [kind, column] of this.#posted) this.#bc.postMessage({ kind, column } satisfies ColumnMessage);
    };
    this.#bc.unref();
  }

  post(snap: Pick<Snapshot, 'rewrites' | 'maxId'>): void {
    for (const kind of COLUMN_KINDS) {
      let col = this.#columns.get(kind);
      if (!col || col.rewrites !== snap.rewrites || col.maxId > snap.maxId) col = emptyColumn(kind, snap.rewrites);
      extend(this.db, col, kind, snap.maxId);
      this.#columns.set(kind, col);
      const column: Column = {
        rewrites: col.rewrites,
        maxId: col.maxId,
        keys: col.keys,
        of: shared(col.of, kind === 'to' ? 0 : col.maxId + 1),
        ...(col.starts
          ? { starts: shared(col.starts, col.maxId + 2), members: shared(col.members!, col.memberCount) }
          : {}),
        memberCount: col.memberCount,
      };
      this.#posted.set(kind, column);
      this.#bc.postMessage({ kind, column } satisfies ColumnMessage);
    }
  }

  close(): void {
    this.#bc.close();
  }
}
