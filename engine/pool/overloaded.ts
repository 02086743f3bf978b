// The engine's "not now": a job refused because its lane already has as much waiting work as it
// may queue. Callers answer it as a temporary condition (HTTP 503 with Retry-After), never as a
// failure of the job itself: nothing ran, nothing changed.

import type { Lane } from '../../shared/jobs.js';

export type { Lane };

/** What a client is told to wait. Queues are sized to drain in well under this. */
export const RETRY_AFTER_SECONDS = 1;

export class EngineOverloaded extends Error {
  override name = 'EngineOverloaded';
  readonly retryAfterSeconds = RETRY_AFTER_SECONDS;
  constructor(readonly lane: Lane) {
    super(`The engine's ${lane} lane is full; the job was not started.`);
  }
}
