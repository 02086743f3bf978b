// What the importer had to guess to read a message, so that the import summary can say which
// messages were stored with a repair (docs/import.md, "What a message says").

export type Repair =
  /** Lines ended in a bare CR (old Mac mail), read as line ends. */
  | 'crLineEnds'
  /** Header bytes that are not UTF-8, read as windows-1252 (raw, or in a word that says UTF-8). */
  | 'eightBitHeaders'
  /** A text part whose bytes its charset cannot decode (none, unknown, or not UTF-8), read as windows-1252. */
  | 'undecodableCharset'
  /** A header block not closed by a blank line: the body starts at the first line that is no field. */
  | 'unterminatedHeaders'
  /** Text after a base64 part's padding or last base64 line, left out of the part. */
  | 'base64TrailingText'
  /** Blanks before the first header field (` From: …`), left out. */
  | 'indentedFirstField'
  /** A Content-Type that is no type/subtype (`text plain`), read as text/plain; charset=us-ascii (RFC 2045, section 5.2). */
  | 'invalidContentType';

/** Every reason, in the order summaries list them, with the words they use. */
export const REPAIR_LABELS: Record<Repair, string> = {
  crLineEnds: 'CR line ends',
  eightBitHeaders: '8-bit header bytes',
  undecodableCharset: 'undecodable charset',
  unterminatedHeaders: 'unterminated header block',
  base64TrailingText: 'text after base64 data',
  indentedFirstField: 'indented first header field',
  invalidContentType: 'invalid Content-Type',
};
