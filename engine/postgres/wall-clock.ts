// A UTC instant as the wall-clock time of a zone, in microseconds: what
// `extract(epoch FROM to_timestamp(ms / 1000) AT TIME ZONE zone) * 1000000` gives on the server,
// computed here from Node's time zone data. Only a guess: the search that uses it compares it
// with the server's own value in the same round trip (search-present.ts), so a zone the two
// disagree on (or one Node does not know) costs a second round trip, never a wrong answer.
const formats = new Map<string, Intl.DateTimeFormat | null>();

function formatFor(zone: string): Intl.DateTimeFormat | null {
  let format = formats.get(zone);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        era: 'short',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      format = null; // a zone name Node does not know: the server is asked instead
    }
    formats.set(zone, format);
  }
  return format;
}

/** `ms` (epoch milliseconds, UTC) as microseconds of its wall-clock time in `zone`; undefined when unknown. */
export function wallClockMicros(ms: number, zone: string): number | undefined {
  if (zone === 'UTC') return ms * 1000;
  const format = formatFor(zone);
  if (!format) return undefined;
  const part: Record<string, string> = {};
  for (const p of format.formatToParts(new Date(ms))) part[p.type] = p.value;
  let year = Number(part.year);
  if (part.era === 'BC' || part.era === 'B') year = 1 - year;
  const wall = new Date(0);
  wall.setUTCFullYear(year, Number(part.month) - 1, Number(part.day));
  wall.setUTCHours(Number(part.hour), Number(part.minute), Number(part.second), 0);
  const value = (wall.getTime() + (((ms % 1000) + 1000) % 1000)) * 1000;
  return Number.isFinite(value) ? value : undefined;
}
