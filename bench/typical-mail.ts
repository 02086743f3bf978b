// "Typical" mail for the import benchmark: a few KB of text, a third with an HTML alternative,
// one in five with a small attachment. Seeded, so every run measures the same corpus.
import { buildMessage, type Mailbox } from '../engine/demo/mime.js';
import { Random } from '../engine/demo/random.js';
import { planCorpus } from './corpus.js';

const WORDS = (
  'the project meeting schedule budget report review draft update customer invoice delivery team ' +
  'release version server backup contract proposal deadline agenda minutes quarter results feedback ' +
  'please could you send attached find below thanks regards tomorrow monday friday office travel ' +
  'approval estimate migration database network security training workshop presentation summary'
).split(' ');

const PEOPLE: Mailbox[] = Array.from({ length: 40 }, (_, i) => ({
  name: `Person ${String.fromCharCode(65 + (i % 26))}${i}`,
  address: `person${i}@example.com`,
}));

function sentence(rng: Random): string {
  const words = Array.from({ length: rng.int(6, 16) }, () => rng.pick(WORDS));
  const text = words.join(' ');
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

function paragraphs(rng: Random, bytes: number): string {
  const out: string[] = [];
  let size = 0;
  while (size < bytes) {
    const lines: string[] = [];
    let line = '';
    for (let i = rng.int(3, 7); i > 0; i--) {
      const s = sentence(rng);
      if (line.length + s.length > 72) {
        lines.push(line.trimEnd());
        line = '';
      }
      line += `${s} `;
    }
    lines.push(line.trimEnd());
    const p = lines.join('\n');
    out.push(p);
    size += p.length + 2;
  }
  return out.join('\n\n');
}

export interface TypicalMessage {
  raw: Buffer;
  sender: string;
  date: Date;
}

export function* typicalMail(count: number, seed = 1): Generator<TypicalMessage> {
  const rng = new Random(seed);
  const start = Date.UTC(2023, 0, 1);
  for (let i = 0; i < count; i++) {
    const from = rng.pick(PEOPLE);
    const date = new Date(start + i * 600_000 + rng.int(0, 599) * 1000);
    const text = `Hello,\n\n${paragraphs(rng, rng.int(1500, 4500))}\n\nBest regards,\n${from.name}\n`;
    const withHtml = rng.chance(0.33);
    const withAttachment = rng.chance(0.2);
    const raw = buildMessage({
      from,
      to: rng.sample(PEOPLE, rng.int(1, 3)),
      ...(rng.chance(0.3) ? { cc: rng.sample(PEOPLE, rng.int(1, 2)) } : {}),
      subject: sentence(rng).slice(0, 60),
      date,
      received: new Date(date.getTime() + rng.int(1, 120) * 1000),
      messageId: `bench.${seed}.${i}@example.com`,
      text,
      ...(withHtml
        ? {
            html: `<html><body>${text
              .split('\n\n')
              .map((p) => `<p>${p}</p>`)
              .join('\n')}</body></html>`,
          }
        : {}),
      ...(withAttachment
        ? {
            attachments: [
              {
                fileName: `report-${i}.pdf`,
                contentType: 'application/pdf',
                content: rng.bytes(rng.int(2_000, 20_000)),
              },
            ],
          }
        : {}),
    });
    yield { raw, sender: from.address, date };
  }
}

const mailbox = (field: string): Mailbox => {
  const m = /^(.*?)\s*<([^>]+)>$/.exec(field);
  return m ? { ...(m[1] ? { name: m[1] } : {}), address: m[2]! } : { address: field };
};

/**
 * The benchmark corpus's mail (bench/corpus.ts: a 50,000-word Zipf vocabulary, 5,000
 * correspondents, threads, HTML on a quarter, attachments on a tenth) as MIME messages: what an
 * archive of real mail costs the full-text index, where typicalMail's 60 words cost it little.
 */
export function* corpusMail(count: number, seed = 42): Generator<TypicalMessage> {
  const plan = planCorpus(count, seed);
  for (const e of plan.messages(Array.from({ length: plan.accounts.length }, (_, i) => i + 1))) {
    const from = mailbox(e.from);
    const date = new Date(e.sentDate);
    const raw = buildMessage({
      from,
      to: [mailbox(e.to)],
      ...(e.cc ? { cc: [mailbox(e.cc)] } : {}),
      ...(e.bcc ? { bcc: [mailbox(e.bcc)] } : {}),
      subject: e.subject,
      date,
      received: new Date(e.receivedDate),
      messageId: e.messageId!.slice(1, -1),
      text: e.textBody ?? '',
      ...(e.htmlBody ? { html: e.htmlBody } : {}),
      attachments: e.attachments.map((a) => ({
        fileName: a.fileName,
        contentType: a.contentType,
        content: Buffer.from(a.content),
      })),
    });
    yield { raw, sender: from.address, date };
  }
}
