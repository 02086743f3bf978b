// Array parameters in PostgreSQL's binary wire format. pg sends a Buffer parameter as binary
// (format code 1), and the server reads it with the receive function of the type the statement
// casts it to (`$1::text[]`): no escaping and quoting of every body into one array literal here,
// no character-by-character parsing of that literal (array_in, tsvectorin) on the server, and
// bytea as its bytes, not as hex. A batch write's large columns travel this way (writer.ts,
// search-index.ts); measured in bench/pg-write.ts.

/** Element type OIDs (pg_type), fixed since PostgreSQL 8.3. */
const OID = { bytea: 17, text: 25, tsvector: 3614 } as const;

/** A one-dimensional array (array_send's layout); null elements are SQL NULL. */
function binaryArray(elementType: number, items: ReadonlyArray<Buffer | null>): Buffer {
  let size = items.length === 0 ? 12 : 20;
  for (const item of items) size += 4 + (item?.length ?? 0);
  const out = Buffer.allocUnsafe(size);
  out.writeInt32BE(items.length === 0 ? 0 : 1, 0); // dimensions
  out.writeInt32BE(items.some((i) => i === null) ? 1 : 0, 4); // has nulls
  out.writeInt32BE(elementType, 8);
  if (items.length === 0) return out;
  out.writeInt32BE(items.length, 12);
  out.writeInt32BE(1, 16); // lower bound
  let at = 20;
  for (const item of items) {
    if (item === null) {
      out.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    out.writeInt32BE(item.length, at);
    item.copy(out, at + 4);
    at += 4 + item.length;
  }
  return out;
}

/** `$n::text[]`. The strings hold no NUL (PostgreSQL text cannot); lone surrogates become U+FFFD, as in pg's text path. */
export const textArray = (items: ReadonlyArray<string | null>): Buffer =>
  binaryArray(
    OID.text,
    items.map((s) => (s === null ? null : Buffer.from(s, 'utf8'))),
  );

/** `$n::bytea[]`. */
export const byteaArray = (items: ReadonlyArray<Buffer | null>): Buffer => binaryArray(OID.bytea, items);

/** `$n::tsvector[]`: documents in tsvectorrecv's layout (search-index.ts documentBinary). */
export const tsvectorArray = (docs: readonly Buffer[]): Buffer => binaryArray(OID.tsvector, docs);
