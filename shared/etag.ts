// The strong entity tag of an answer's bytes (docs/openapi.md, "Caching and conditional
// requests"). Shared because both threads make one: the gateway for what it serialises itself,
// the engine for a message detail it serialises on a worker thread (engine/rules/encoded-detail.ts).
import { createHash } from 'node:crypto';

/** A strong entity tag of these bytes (a string counts as its UTF-8 bytes). */
export function etagOf(content: string | Uint8Array): string {
  return `"${createHash('sha256').update(content).digest('base64url').slice(0, 27)}"`;
}
