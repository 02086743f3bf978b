// Dates cross every boundary as epoch milliseconds and leave the engine as ISO 8601 with `Z`.

export function iso(ms: number): string;
export function iso(ms: number | null | undefined): string | null;
export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}
