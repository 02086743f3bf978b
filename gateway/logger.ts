// Structured logs (pino). Authorization headers and keys never reach a log line.
//
// JSON lines by default, one object per event, for PM2, journald and pipes. A person at a terminal
// gets one readable line per event instead (`08:52:14.704 INFO  listening on … port=5000`): when
// stdout is a TTY, or always with LOG_FORMAT=pretty (LOG_FORMAT=json forces JSON). The same
// redaction applies to both; the readable form is made from the JSON line pino wrote.
import { styleText } from 'node:util';
import { pino, type DestinationStream, type Logger } from 'pino';

export type LogFormat = 'json' | 'pretty';

export function createLogger(options: { level?: string; format?: LogFormat } = {}): Logger {
  const format = options.format ?? logFormat(process.env.LOG_FORMAT, process.stdout.isTTY === true);
  const settings = {
    name: 'mail-archive-gateway',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'key'],
      censor: '[redacted]',
    },
  };
  return format === 'pretty' ? pino(settings, prettyDestination(process.stdout)) : pino(settings);
}

/** LOG_FORMAT when it says json or pretty (in any case), else pretty exactly when stdout is a terminal. */
export function logFormat(setting: string | undefined, isTty: boolean): LogFormat {
  const asked = setting?.trim().toLowerCase();
  if (asked === 'json' || asked === 'pretty') return asked;
  return isTty ? 'pretty' : 'json';
}

const LEVELS: Record<number, { label: string; style: Parameters<typeof styleText>[0] }> = {
  10: { label: 'TRACE', style: 'gray' },
  20: { label: 'DEBUG', style: 'gray' },
  30: { label: 'INFO ', style: 'green' },
  40: { label: 'WARN ', style: 'yellow' },
  50: { label: 'ERROR', style: 'red' },
  60: { label: 'FATAL', style: 'red' },
};
/** What every line carries and the readable form shows elsewhere, or not at all. */
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name', 'err']);

/** One readable line (plus an error's stack, indented) from one of pino's JSON lines. */
export function prettyLine(json: string, colour: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  // The caller decides on colour (the destination's own terminal), not styleText's look at process.stdout.
  const paint = (style: Parameters<typeof styleText>[0], text: string) =>
    colour ? styleText(style, text, { validateStream: false }) : text;
  const level = LEVELS[entry.level as number] ?? { label: String(entry.level).padEnd(5), style: 'white' };
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 23) : '';
  const fields = Object.entries(entry)
    .filter(([k]) => !OMITTED.has(k))
    .map(([k, v]) => `${paint('gray', `${k}=`)}${typeof v === 'string' ? v : JSON.stringify(v)}`);
  let line = [paint('gray', time), paint(level.style, level.label), String(entry.msg ?? ''), ...fields]
    .filter((part) => part !== '')
    .join(' ');
  const err = entry.err as { type?: string; message?: string; stack?: string } | undefined;
  if (err) line += `\n    ${(err.stack ?? `${err.type ?? 'Error'}: ${err.message ?? ''}`).replaceAll('\n', '\n    ')}`;
  return `${line}\n`;
}

/** A pino destination that writes readable lines to `out`, synchronously like pino's own. */
function prettyDestination(out: NodeJS.WriteStream): DestinationStream {
  const colour = out.isTTY === true && out.hasColors?.() === true;
  return { write: (json: string) => void out.write(prettyLine(json, colour)) };
}
