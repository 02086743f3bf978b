// mail-archive show: GET /api/v1/emails/{id} from a shell (docs/search.md, "From the command
// line"), through the same detail job, recorded in the access log as an Open with source `cli`.
import type { Command } from 'commander';
import type { EmailDetailDto } from '../../../shared/dto.js';
import { StoreError } from '../../../shared/errors.js';
import { htmlToText } from '../../import/parse.js';
import { parseId, printJson, UsageError } from '../context.js';
import { withReader } from '../reader.js';
import { terminalLine, terminalText } from '../terminal-text.js';

interface ShowOptions {
  json?: boolean;
  text?: boolean;
  html?: boolean;
  user?: string;
}

/** The text to read: the text body, else the HTML body rendered as text, as the importer renders it. */
function readableBody(email: EmailDetailDto): string | null {
  if (email.textBody !== null && email.textBody.trim() !== '') return email.textBody;
  if (email.htmlBody !== null && email.htmlBody.trim() !== '') return htmlToText(email.htmlBody);
  return null;
}

function headers(email: EmailDetailDto): string {
  const lines: Array<[string, string]> = [
    ['Message', `${email.id} (account ${email.accountId}, folder ${terminalLine(email.folderName)})`],
    ['Date', email.sentDate],
    ['Received', email.receivedDate],
    ['From', terminalLine(email.from)],
    ['To', terminalLine(email.to)],
  ];
  if (email.cc) lines.push(['Cc', terminalLine(email.cc)]);
  if (email.bcc) lines.push(['Bcc', terminalLine(email.bcc)]);
  lines.push(['Subject', terminalLine(email.subject)]);
  if (email.messageId) lines.push(['Message-ID', terminalLine(email.messageId)]);
  for (const a of email.attachments)
    lines.push([
      'Attachment',
      `${a.id} ${terminalLine(a.fileName)} (${terminalLine(a.contentType)}, ${a.size.toLocaleString('en')} bytes)`,
    ]);
  return lines.map(([name, value]) => `${name}: ${value}`).join('\n');
}

/** What `show` prints: the detail itself for --json, else the text. */
function render(email: EmailDetailDto, opts: ShowOptions): EmailDetailDto | string {
  if (opts.json) return email;
  if (opts.html) {
    if (email.htmlBody === null) throw new StoreError(`Message ${email.id} has no HTML body; --text prints its text.`);
    return terminalText(email.htmlBody).replace(/\n?$/, '\n');
  }
  const body = readableBody(email);
  if (opts.text) {
    if (body === null) throw new StoreError(`Message ${email.id} has no body.`);
    return terminalText(body).replace(/\n?$/, '\n');
  }
  const text = body === null ? '(no body)' : terminalText(body).replace(/\n+$/, '');
  return `${headers(email)}\n\n${text}\n`;
}

export function registerShow(program: Command): void {
  program
    .command('show')
    .description('print one message as GET /api/v1/emails/{id} returns it: its headers and text')
    .argument('<id>', 'the message id (as search prints it)')
    .option('--text', 'print only the text body (the HTML body rendered as text when there is none)')
    .option('--html', 'print only the HTML body, as stored (untrusted markup; escapes removed)')
    .option('--user <username>', 'read as this user (the accounts they see); default: the operator, every account')
    .option('--json', 'print the message exactly as GET /api/v1/emails/{id} answers it')
    .action(async (idText: string, opts: ShowOptions, cmd: Command) => {
      const id = parseId(idText, 'the message id');
      const chosen = [opts.json && '--json', opts.text && '--text', opts.html && '--html'].filter(Boolean);
      if (chosen.length > 1) throw new UsageError(`${chosen.join(' and ')} cannot be combined: give one of them.`);
      const printed = await withReader(cmd, opts.user, async (reader) => {
        const email = await reader.run({ kind: 'detail', id });
        if (!email) {
          const who = opts.user === undefined ? '' : ` that ${opts.user} may read`;
          throw new StoreError(`There is no message ${id}${who}.`);
        }
        const output = render(email, opts);
        // Recorded once there is something to show, as REST records an Open it answers; a missing
        // message, or a body it does not have, shows nothing and is not recorded.
        await reader.record({ type: 'Open', emailId: email.id, accountId: email.accountId });
        return output;
      });
      if (opts.json) printJson(printed);
      else process.stdout.write(printed as string);
    });
}
