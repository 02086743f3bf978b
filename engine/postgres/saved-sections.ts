// What a PostgreSQL archive's saved index file holds beside the snapshot (the store's sections of
// engine/search/bitsets/persist.ts, ADR 23): the documents its sets hold, and the messages' rows it
// was built from, so that a start with nothing changed keeps the sort orders instead of reading
// them again (ADR 22's refresh reuses them while the ids are the same).
//
// Folders are saved as the list of distinct names and a number per message, not as one JSON
// array of every message's folder: that array is one JavaScript string, and a string holds at
// most 2^29 - 24 characters (V8's limit, on Node 20 as on 24), which a name of 50 characters
// reaches at 10,000,000 messages (docs/scale.md, "What breaks first"). Files written before, with
// that array, are still read.
import type { PgSnapshotState } from './search-snapshot.js';

type Rows = PgSnapshotState['rows'];

/** The sections to save, in the order fromSections reads them. */
export function sections(state: Pick<PgSnapshotState, 'indexed' | 'rows'>): Uint8Array[] {
  const bytes = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const { ids, sent, account, outgoing, folder } = state.rows;
  const names: string[] = [];
  const numbers = new Map<string, number>();
  const folderOf = new Int32Array(folder.length);
  for (let i = 0; i < folder.length; i++) {
    const name = folder[i] ?? null;
    if (name === null) {
      folderOf[i] = -1;
      continue;
    }
    let n = numbers.get(name);
    if (n === undefined) numbers.set(name, (n = names.push(name) - 1));
    folderOf[i] = n;
  }
  const encoded = new TextEncoder().encode(JSON.stringify(names));
  return [
    bytes(Int32Array.from(state.indexed)),
    bytes(ids),
    bytes(sent),
    bytes(account),
    outgoing,
    encoded,
    bytes(folderOf),
  ];
}

/** The saved sections as a refresh's state, or undefined when they are not this store's. */
export function fromSections(parts: Uint8Array[]): { indexed: Int32Array; rows: Rows } | undefined {
  if (parts.length !== 6 && parts.length !== 7) return undefined;
  const [indexed, ids, sent, account, outgoing, folders, folderOf] = parts as [
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array | undefined,
  ];
  // Each section is a fresh buffer of its own (persist.ts), so typed views start aligned.
  const int32 = (b: Uint8Array) => new Int32Array(b.buffer, 0, b.byteLength / 4);
  const decoded = JSON.parse(new TextDecoder().decode(folders)) as Array<string | null>;
  let folder: Array<string | null>;
  if (folderOf === undefined)
    folder = decoded; // a file of an earlier release: every message's folder
  else {
    const of = int32(folderOf);
    folder = new Array<string | null>(of.length);
    for (let i = 0; i < of.length; i++) {
      const n = of[i]!;
      if (n < -1 || n >= decoded.length) return undefined;
      folder[i] = n === -1 ? null : decoded[n]!;
    }
  }
  const rows: Rows = {
    ids: int32(ids),
    sent: new Float64Array(sent.buffer, 0, sent.byteLength / 8),
    account: int32(account),
    outgoing,
    folder,
  };
  const n = rows.ids.length;
  if (rows.sent.length !== n || rows.account.length !== n || outgoing.length !== n || rows.folder.length !== n)
    return undefined;
  return { indexed: int32(indexed), rows };
}
