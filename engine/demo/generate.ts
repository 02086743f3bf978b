// Generated mail for the demo archive: RFC 5322 messages per account, deterministic per seed.
// The first messages of each account are a fixed showcase (every feature the archive handles
// appears at least once); the rest are drawn from the phrase book.
import { STORED_BODY_LIMIT } from '../rules/body.js';
import {
  COLLEAGUES,
  CUSTOMERS,
  FRIENDS,
  NEWSLETTERS,
  PHRASES,
  PROJECTS,
  SUPPORT,
  TOPICS,
  VENDORS,
  type AccountKey,
  type DemoAccountSpec,
  type FolderKind,
  type Lang,
  type Person,
} from './corpus.js';
import { csvFile, pdfFile, pngFile, textFile } from './files.js';
import { buildMessage, type Mailbox, type MessageSpec, type MimeAttachment } from './mime.js';
import { Random } from './random.js';

export interface DemoMessage {
  folder: string;
  raw: Buffer;
  date: Date;
  messageId: string;
}

const YEAR_FOLDER = /^Archive\/(\d{4})$/;
const RECENT_FROM = Date.UTC(2024, 0, 1);
const RECENT_TO = Date.UTC(2025, 6, 1);
// One company logo, used in many messages: stored once, however often it is attached.
const LOGO = pngFile(24, [0, 84, 166], [255, 255, 255]);

/** Whom each account writes to, and about what. */
const SENT_TO: Readonly<Record<AccountKey, readonly [readonly Person[], FolderKind]>> = {
  work: [COLLEAGUES, 'colleagues'],
  personal: [FRIENDS, 'friends'],
  support: [CUSTOMERS, 'tickets'],
};

interface Thread {
  id: string;
  subject: string;
  from: Mailbox;
}

class Composer {
  readonly #rng: Random;
  readonly #account: DemoAccountSpec;
  #seq = 0;
  #recent: Thread[] = [];

  constructor(account: DemoAccountSpec, seed: number) {
    this.#account = account;
    this.#rng = new Random(seed + [...account.key].reduce((h, c) => h * 31 + c.charCodeAt(0), 7));
  }

  /** Folder and spec become a message; the message joins the threads that replies may pick. */
  finish(folder: string, spec: Omit<MessageSpec, 'messageId'>, incoming: boolean): DemoMessage {
    const messageId = `demo.${this.#account.key}.${++this.#seq}@${this.#account.owner.address.split('@')[1]}`;
    const received = incoming ? new Date(spec.date.getTime() + this.#rng.int(5, 900) * 1000) : undefined;
    const raw = buildMessage({ ...spec, messageId, ...(received ? { received } : {}) });
    if (incoming)
      this.#recent = [
        { id: messageId, subject: spec.subject.replace(/^Re: /, ''), from: spec.from },
        ...this.#recent,
      ].slice(0, 20);
    return { folder, raw, date: spec.date, messageId };
  }

  date(folder: string): Date {
    const year = YEAR_FOLDER.exec(folder);
    const [from, to] = year
      ? [Date.UTC(Number(year[1]), 0, 1), Date.UTC(Number(year[1]) + 1, 0, 1)]
      : [RECENT_FROM, RECENT_TO];
    return new Date(from + Math.floor(this.#rng.next() * (to - from)));
  }

  letter(lang: Lang, to: Person, from: Person): string {
    const p = PHRASES[lang];
    const paragraphs = Array.from({ length: this.#rng.int(1, 3) }, () =>
      this.#rng.sample(p.sentences, this.#rng.int(1, 3)).join(' '),
    );
    const greeting = this.#rng.pick(p.greeting).replace('{first}', to.name.split(' ')[0]!);
    return `${greeting}\n\n${paragraphs.join('\n\n')}\n\n${this.#rng.pick(p.closing)}\n${from.name}\n`;
  }

  subject(lang: Lang, kind: FolderKind, folder: string): string {
    const options = PHRASES[lang].subjects[kind] ?? PHRASES.en.subjects[kind] ?? ['Hello'];
    return this.#rng
      .pick(options)
      .replace('{project}', PROJECTS[folder] ?? 'Apollo')
      .replace('{topic}', this.#rng.pick(TOPICS))
      .replace('{n}', String(this.#rng.int(1000, 9999)));
  }

  /** A random message for a folder of the given kind. */
  random(folder: string, kind: FolderKind): DemoMessage {
    const rng = this.#rng;
    const owner = this.#account.owner;
    const date = this.date(folder);
    if (kind === 'sent') {
      const [people, topic] = SENT_TO[this.#account.key];
      const to = rng.pick(people);
      const thread = rng.chance(0.5) ? this.#recent.find((t) => t.from.address === to.address) : undefined;
      return this.finish(
        folder,
        {
          from: owner,
          to: [to],
          date,
          ...(rng.chance(0.2) ? { bcc: [{ address: owner.address.replace(/^[^@]+/, 'archive') }] } : {}),
          subject: thread ? `Re: ${thread.subject}` : this.subject(to.lang, topic, folder),
          ...(thread ? { inReplyTo: thread.id } : {}),
          text: this.letter(to.lang, to, owner),
        },
        false,
      );
    }
    if (kind === 'newsletters') {
      const sender = rng.pick(NEWSLETTERS);
      return this.finish(folder, newsletter(rng, sender, owner, date, this.subject(sender.lang, kind, folder)), true);
    }
    const from = pickSender(rng, kind);
    const lang = from.lang;
    const reply = rng.chance(0.2) ? this.#recent.find((t) => t.from.address !== from.address) : undefined;
    const text = this.letter(lang, owner, from);
    const withLogo = rng.chance(0.5);
    const html = rng.chance(kind === 'travel' ? 1 : 0.35) ? toHtml(text, withLogo) : undefined;
    const attachments = [...attachmentsFor(rng, kind, folder, this.#seq + 1), ...(html && withLogo ? [logo()] : [])];
    return this.finish(
      folder,
      {
        from,
        to: [kind === 'escalations' ? SUPPORT : owner],
        date,
        ...(kind === 'colleagues' && rng.chance(0.25) ? { cc: [rng.pick(COLLEAGUES)] } : {}),
        subject: reply ? `Re: ${reply.subject}` : this.subject(lang, kind, folder),
        ...(reply ? { inReplyTo: reply.id } : {}),
        text,
        ...(html ? { html } : {}),
        attachments,
      },
      true,
    );
  }

  get rng(): Random {
    return this.#rng;
  }
}

function pickSender(rng: Random, kind: FolderKind): Person {
  switch (kind) {
    case 'friends':
      return rng.pick(FRIENDS);
    case 'receipts':
      return rng.pick(VENDORS);
    case 'tickets':
      return rng.pick(CUSTOMERS);
    case 'escalations':
      return COLLEAGUES[0]!;
    case 'travel':
      return {
        name: 'Rail & Fly Reservations',
        address: 'bookings@railfly.example',
        lang: rng.pick<Lang>(['en', 'fr']),
      };
    default:
      return rng.pick(COLLEAGUES);
  }
}

function attachmentsFor(rng: Random, kind: FolderKind, folder: string, n: number): MimeAttachment[] {
  switch (kind) {
    case 'project': {
      const project = PROJECTS[folder] ?? 'Project';
      return rng.chance(0.4)
        ? [
            {
              fileName: `${project}-status-${n}.pdf`,
              contentType: 'application/pdf',
              content: pdfFile(`${project} status report`, [`Report ${n}`, 'All milestones on track.']),
            },
          ]
        : [];
    }
    case 'receipts':
      return [
        {
          fileName: `invoice-${n}.pdf`,
          contentType: 'application/pdf',
          content: pdfFile(`Invoice ${n}`, [`Amount due: ${rng.int(20, 900)}.00 EUR`]),
        },
        ...(rng.chance(0.5)
          ? [{ fileName: `invoice-${n}-items.csv`, contentType: 'text/csv', content: lineItems(rng) }]
          : []),
      ];
    case 'travel':
      return [
        {
          fileName: `e-ticket-${n}.pdf`,
          contentType: 'application/pdf',
          content: pdfFile('E-ticket', [`Booking ${n}`, 'Seat 42A']),
        },
      ];
    case 'friends':
      return rng.chance(0.25)
        ? [{ fileName: `IMG_${4000 + n}.png`, contentType: 'image/png', content: photo(rng) }]
        : [];
    case 'tickets':
    case 'escalations':
      return rng.chance(kind === 'escalations' ? 1 : 0.2)
        ? [{ fileName: `server-${n}.log`, contentType: 'text/plain', content: textFile(logLines(rng, 20).join('\n')) }]
        : [];
    case 'colleagues':
      return rng.chance(0.15)
        ? [{ fileName: `figures-${n}.csv`, contentType: 'text/csv', content: lineItems(rng) }]
        : [];
    default:
      return [];
  }
}

const logo = (): MimeAttachment => ({
  fileName: 'logo.png',
  contentType: 'image/png',
  content: LOGO,
  contentId: 'logo@northwind.example',
});
const photo = (rng: Random) =>
  pngFile(32, [rng.int(0, 255), rng.int(0, 255), rng.int(0, 255)], [rng.int(0, 255), rng.int(0, 255), rng.int(0, 255)]);

function lineItems(rng: Random): Buffer {
  const items = ['Consulting (hours)', 'Licence, annual', 'Support plan', 'Hardware, laptop', 'Travel expenses'];
  return csvFile(
    ['Item', 'Quantity', 'Unit price (EUR)'],
    rng.sample(items, rng.int(2, 4)).map((i) => [i, rng.int(1, 20), rng.int(10, 500)]),
  );
}

function logLines(rng: Random, count: number, start = Date.UTC(2024, 2, 1)): string[] {
  return Array.from({ length: count }, (_, i) => {
    const at = new Date(start + i * 1000).toISOString();
    return `${at} ${rng.pick(['INFO ', 'INFO ', 'WARN ', 'DEBUG'])} worker-${rng.int(1, 8)} processed job ${100000 + i} in ${rng.int(1, 400)} ms`;
  });
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

function toHtml(text: string, withLogo: boolean): string {
  const body = text
    .trim()
    .split('\n\n')
    .map((p) => `<p>${escapeHtml(p).replace(/\n/g, '<br>')}</p>`)
    .join('\n');
  return `<!DOCTYPE html><html><body style="font-family:sans-serif">\n${body}\n${withLogo ? '<p><img src="cid:logo@northwind.example" alt="Northwind"></p>' : ''}</body></html>`;
}

function newsletter(
  rng: Random,
  from: Person,
  to: Person,
  date: Date,
  subject: string,
): Omit<MessageSpec, 'messageId'> {
  const items = rng
    .sample(TOPICS, 3)
    .map(
      (t) =>
        `<li><a href="https://news.example/${encodeURIComponent(t)}">${escapeHtml(t)}</a>: ${escapeHtml(rng.pick(PHRASES.en.sentences))}</li>`,
    );
  // HTML only, no text part: the importer derives the text body from it.
  const html = `<!DOCTYPE html><html><body><img src="cid:logo@northwind.example" alt="logo"><h1>${escapeHtml(subject)}</h1><ul>${items.join('')}</ul><p><small>Unsubscribe at any time.</small></p></body></html>`;
  return { from, to: [to], date, subject, html, attachments: [logo()] };
}

/** Every feature at least once, ahead of the random mail. */
function* showcase(c: Composer, account: DemoAccountSpec): Generator<DemoMessage> {
  const owner = account.owner;
  const at = (iso: string) => new Date(iso);
  if (account.key === 'work') {
    const [dan, , , , juergen, francoise, yamada] = COLLEAGUES as [
      Person,
      Person,
      Person,
      Person,
      Person,
      Person,
      Person,
    ];
    const lines: string[] = [];
    for (let size = 0; size <= STORED_BODY_LIMIT + 50_000;) {
      const chunk = logLines(c.rng, 500, Date.UTC(2024, 2, 1) + lines.length * 1000);
      lines.push(...chunk);
      size += chunk.reduce((n, l) => n + l.length + 1, 0);
    }
    yield c.finish(
      'INBOX',
      {
        from: { name: 'Northwind Ops', address: 'ops@northwind.example' },
        to: [owner],
        date: at('2024-03-31T23:50:00Z'),
        subject: 'Full server log export (March 2024)',
        text: `Complete log of the month, as requested.\n\n${lines.join('\n')}\n`,
      },
      true,
    );
    yield c.finish(
      'INBOX',
      {
        from: juergen,
        to: [owner],
        date: at('2024-05-14T08:12:00Z'),
        subject: 'Angebot für die Überarbeitung der Website',
        text: c.letter('de', owner, juergen),
        attachments: [
          {
            fileName: 'Angebot_Überarbeitung_Website.pdf',
            contentType: 'application/pdf',
            content: pdfFile('Angebot: Ueberarbeitung der Website', ['Konzeption: 4.800 EUR', 'Umsetzung: 12.500 EUR']),
          },
        ],
      },
      true,
    );
    const minutes = c.letter('fr', owner, francoise);
    yield c.finish(
      'INBOX/Projects/Apollo',
      {
        from: francoise,
        to: [owner],
        cc: [dan],
        date: at('2024-06-03T15:40:00Z'),
        subject: 'Compte rendu du comité de pilotage',
        text: minutes,
        html: toHtml(minutes, true),
        attachments: [
          logo(),
          { fileName: 'budget-prévisionnel.csv', contentType: 'text/csv', content: lineItems(c.rng) },
        ],
      },
      true,
    );
    yield c.finish(
      'INBOX',
      {
        from: yamada,
        to: [owner],
        date: at('2024-07-22T01:05:00Z'),
        subject: '会議の議事録について',
        text: c.letter('ja', owner, yamada),
        attachments: [
          {
            fileName: '議事録.txt',
            contentType: 'text/plain',
            content: textFile('議事録\n1. 予算の確認\n2. 次回の日程'),
          },
        ],
      },
      true,
    );
    const budget = c.finish(
      'INBOX',
      {
        from: dan,
        to: [owner],
        date: at('2024-09-30T09:00:00Z'),
        subject: 'Quarterly budget review',
        text: c.letter('en', owner, dan),
        attachments: [{ fileName: 'budget-q3.csv', contentType: 'text/csv', content: lineItems(c.rng) }],
      },
      true,
    );
    yield budget;
    yield c.finish(
      'Sent',
      {
        from: owner,
        to: [dan],
        bcc: [{ name: 'Finance Archive', address: 'finance-archive@northwind.example' }],
        date: at('2024-09-30T11:30:00Z'),
        subject: 'Re: Quarterly budget review',
        inReplyTo: budget.messageId,
        text: c.letter('en', dan, owner),
      },
      false,
    );
  } else if (account.key === 'personal') {
    yield c.finish(
      'Newsletters',
      newsletter(c.rng, NEWSLETTERS[2]!, owner, at('2024-04-05T06:00:00Z'), 'Tech Digest 📰 — your weekly briefing'),
      true,
    );
    const zoe = FRIENDS[0]!;
    yield c.finish(
      'INBOX',
      {
        from: zoe,
        to: [owner],
        date: at('2024-08-16T18:20:00Z'),
        subject: '🎉 Party on Saturday!',
        text: c.letter('en', owner, zoe),
        attachments: [{ fileName: 'invitation.png', contentType: 'image/png', content: photo(c.rng) }],
      },
      true,
    );
    const booking =
      'Bonjour Alice,\n\nVotre réservation à Genève est confirmée : hôtel Léman, du 12 au 14 octobre.\n\nBien à vous,\nRail & Fly\n';
    yield c.finish(
      'Travel',
      {
        from: { name: 'Rail & Fly Réservations', address: 'bookings@railfly.example' },
        to: [owner],
        date: at('2024-09-01T10:00:00Z'),
        subject: 'Votre réservation à Genève est confirmée',
        text: booking,
        html: toHtml(booking, false),
        attachments: [
          {
            fileName: 'réservation-genève.pdf',
            contentType: 'application/pdf',
            content: pdfFile('Reservation Geneve', ['Hotel Leman', '12-14 octobre']),
          },
        ],
      },
      true,
    );
  } else {
    const sophie = CUSTOMERS[2]!;
    const ticket = c.finish(
      'INBOX',
      {
        from: sophie,
        to: [owner],
        date: at('2024-10-02T07:45:00Z'),
        subject: 'Demande #4711 : facture introuvable',
        text: c.letter('fr', owner, sophie),
        attachments: [{ fileName: 'export-comptes.csv', contentType: 'text/csv', content: lineItems(c.rng) }],
      },
      true,
    );
    yield ticket;
    yield c.finish(
      'Sent',
      {
        from: owner,
        to: [sophie],
        date: at('2024-10-02T09:10:00Z'),
        subject: 'Re: Demande #4711 : facture introuvable',
        inReplyTo: ticket.messageId,
        text: c.letter('fr', sophie, owner),
      },
      false,
    );
  }
}

/** `count` messages for one account: the showcase first, then random mail by folder weight. */
export function* demoMail(account: DemoAccountSpec, count: number, seed: number): Generator<DemoMessage> {
  const c = new Composer(account, seed);
  let produced = 0;
  for (const m of showcase(c, account)) {
    if (produced++ >= count) return;
    yield m;
  }
  const folders = account.folders.map((f) => [f, f[1]] as const);
  for (; produced < count; produced++) {
    const [folder, , kind] = c.rng.weighted(folders);
    yield c.random(folder, kind);
  }
}

/** Showcase messages per account; a demo smaller than their sum would leave features out. */
export const SHOWCASE_TOTAL = 11;
