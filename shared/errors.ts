// Errors that mean "the operator asked for something that cannot be": the CLI prints the
// message as its one sentence; anything else is a bug and keeps its stack for the log.
export class StoreError extends Error {
  override name = 'StoreError';
}
