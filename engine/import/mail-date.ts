// RFC 5322 date parsing. Date.parse is not used on its own because it accepts nonsense ("12345"
// is the year 12344), reads a date without a zone as local time, and mailparser replaces an
// unparseable Date header with "now", hiding that the header was bad.

const MONTHS: Record<string, number> = {
  jan: 0,
  feb: 1,
  mar: 2,
  apr: 3,
  may: 4,
  jun: 5,
  jul: 6,
  aug: 7,
  sep: 8,
  oct: 9,
  nov: 10,
  dec: 11,
};

// Obsolete zone names of RFC 5322 section 4.3, in minutes east of UTC. Military letters and
// unknown names count as UTC, as the RFC allows.
const ZONES: Record<string, number> = {
  ut: 0,
  gmt: 0,
  utc: 0,
  z: 0,
  est: -300,
  edt: -240,
  cst: -360,
  cdt: -300,
  mst: -420,
  mdt: -360,
  pst: -480,
  pdt: -420,
};

// [day-of-week ","] day month year hour ":" minute [":" second] [zone]
const RFC5322 =
  /(?:^|[\s,])(\d{1,2})[\s-]+([a-z]{3})[a-z]*\.?[\s-]+(\d{2,4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?\s*([+-]\d{3,4}|[a-z]{1,5})?(?![a-z\d])/i;

// Some mailers and scripts write ISO 8601 instead, with "T" or a space, "-" or "/", seconds or
// not, and often no zone at all ("2012-12-08 00:48"): no zone means UTC, as everywhere here.
const ISO = /^(\d{4})[-/](\d{2})[-/](\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*(Z|UTC|GMT|[+-]\d{2}:?\d{2})?$/i;

/** Epoch milliseconds of an RFC 5322 date (obsolete forms included), or null when it is not one. */
export function parseMailDate(text: string | null | undefined): number | null {
  if (!text) return null;
  const value = text.replace(/\([^)]*\)/g, ' ').trim(); // comments such as "(CEST)"
  const iso = ISO.exec(value);
  if (iso) {
    const [, y, mo, d, hh, mm, ss, frac, zone] = iso;
    const offset =
      !zone || /^(?:z|utc|gmt)$/i.test(zone) ? 'Z' : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
    const ms = Date.parse(`${y}-${mo}-${d}T${hh}:${mm}:${ss ?? '00'}${frac ?? ''}${offset}`);
    if (Number.isNaN(ms) || new Date(ms).getUTCFullYear() < 1900) return null;
    return ms;
  }
  const m = RFC5322.exec(value);
  if (!m) return null;
  const [, d, mon, y, hh, mm, ss, zone] = m;
  const month = MONTHS[mon!.toLowerCase()];
  if (month === undefined) return null;
  let year = Number(y);
  if (y!.length === 2) year += year < 50 ? 2000 : 1900;
  else if (y!.length === 3) year += 1900;
  const day = Number(d);
  const hour = Number(hh);
  const minute = Number(mm);
  const second = Number(ss ?? 0);
  if (year < 1900 || day < 1 || hour > 23 || minute > 59 || second > 60) return null;
  const utc = Date.UTC(year, month, day, hour, minute, Math.min(second, 59));
  if (new Date(utc).getUTCDate() !== day) return null; // 31 Feb and the like
  return utc - zoneOffsetMinutes(zone) * 60_000;
}

function zoneOffsetMinutes(zone: string | undefined): number {
  if (!zone) return 0;
  // `-600` is -06:00 and `+100` is +01:00, as mail readers take a zone written without its
  // leading zero; `+0100` is the RFC form.
  const numeric = /^([+-])(\d{1,2})(\d{2})$/.exec(zone);
  if (numeric) {
    const minutes = Number(numeric[2]) * 60 + Number(numeric[3]);
    return numeric[1] === '-' ? -minutes : minutes;
  }
  return ZONES[zone.toLowerCase()] ?? 0;
}

/** The date a Received header ends with, after its last semicolon. */
export function receivedHeaderDate(value: string): number | null {
  const semicolon = value.lastIndexOf(';');
  return semicolon < 0 ? null : parseMailDate(value.slice(semicolon + 1));
}
