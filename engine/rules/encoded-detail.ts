// A message detail as the REST answer's bytes (JobMap.detailJson), for either store.
//
// The gateway thread serves every client, so what it does per byte of a message counts: a 35 MB
// detail once cost it a structured-clone parse, a JSON.stringify and a SHA-256 of 35 MB for each
// reader, and four readers pushed everyone's /accounts p99 to 54 ms (docs/security.md, item 4). Here the
// worker does all three and hands over one buffer, which the pool moves (engine/pool/worker.ts) rather than
// copies; the gateway writes it as it is.
import type { EmailDetailDto } from '../../shared/dto.js';
import { etagOf } from '../../shared/etag.js';
import type { EncodedDetail } from '../../shared/jobs.js';
import { isMovedToQueryLane, type MovedToQueryLane } from './large-detail.js';

const utf8 = new TextEncoder();

export function encodeDetail(detail: EmailDetailDto | null): EncodedDetail | null;
export function encodeDetail(detail: EmailDetailDto | MovedToQueryLane | null): EncodedDetail | MovedToQueryLane | null;
export function encodeDetail(
  detail: EmailDetailDto | MovedToQueryLane | null,
): EncodedDetail | MovedToQueryLane | null {
  if (detail === null || isMovedToQueryLane(detail)) return detail;
  // TextEncoder gives the bytes an ArrayBuffer of their own (Buffer.from may slice a shared pool),
  // which is what lets the pool move it.
  const json = utf8.encode(JSON.stringify(detail));
  return { id: detail.id, accountId: detail.accountId, json, etag: etagOf(json) };
}

export function isEncodedDetail(value: unknown): value is EncodedDetail {
  return typeof value === 'object' && value !== null && (value as EncodedDetail).json instanceof Uint8Array;
}
