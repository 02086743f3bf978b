// Size-aware routing of the message detail job (docs/security.md, item 4). The interactive lane is one
// thread for sub-millisecond point reads, key checks above all; reading, cloning and serialising a
// 35 MB body there once made everyone's /accounts wait 816 ms. A detail job sent to that lane
// carries a byte limit; the store first reads the size of the message's stored bodies (octet_length
// reads no content: SQLite takes it from the record header, PostgreSQL from the TOAST pointer), and when they are larger it
// answers "moved" without reading them. The pool then runs the job again on the query lane, where
// long reads queue behind each other. Small messages, nearly all of them, still take one crossing.

/** Stored body bytes above which a message's detail is read on the query lane. */
export const INTERACTIVE_DETAIL_MAX_BYTES = 256 * 1024;

/**
 * What one attachment adds to a detail's size for this routing: its entry in the answer (id,
 * name, type, size) and reading its row. The whole size counts them, so a message of 50,000
 * attachments (a hostile winmail.dat: docs/security.md, "Mail shaped by an attacker", item 3) is read on the query lane like a large
 * body: about 1,000 attachments weigh as much as the limit.
 */
export const ATTACHMENT_ENTRY_BYTES = 256;

/** What a detail job on the interactive lane answers for a message too large for it. */
export interface MovedToQueryLane {
  movedToQueryLane: true;
  bodyBytes: number;
}

export const movedToQueryLane = (bodyBytes: number): MovedToQueryLane => ({ movedToQueryLane: true, bodyBytes });

export function isMovedToQueryLane(value: unknown): value is MovedToQueryLane {
  return typeof value === 'object' && value !== null && (value as MovedToQueryLane).movedToQueryLane === true;
}
