// The OpenAPI document under Spectral's own OpenAPI rules and the OWASP API Security ruleset
// (@stoplight/spectral-cli and @stoplight/spectral-owasp-ruleset, devDependencies, run offline).
// Every finding left must be one SPEC.md forces, listed below and in docs/openapi.md ("What the
// OWASP ruleset still reports") with its reason; a new finding, or a listed one that went away,
// fails the test, so the list stays exact.
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { buildOpenApiDocument } from '../gateway/api/openapi.js';
import { defaultSettings } from '../shared/config.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

interface Finding {
  code: string;
  path: string[];
  severity: number;
  message: string;
}

/** Message-derived free text: as long as the archived message (or Mail Archiver's row) makes it. */
const MESSAGE_TEXT = [
  'MailAccountDto.properties.name',
  'MailAccountDto.properties.emailAddress',
  'MailAccountDto.properties.provider',
  'FolderNodeDto.properties.name',
  'FolderNodeDto.properties.fullPath',
  ...['EmailSummaryDto', 'EmailDetailDto'].flatMap((s) =>
    ['subject', 'from', 'to', 'folderName'].map((f) => `${s}.properties.${f}`),
  ),
  'EmailSummaryDto.properties.snippet',
  'EmailSummaryDto.properties.snippetAttachment.properties.fileName',
  ...['cc', 'bcc', 'messageId', 'textBody', 'htmlBody'].map((f) => `EmailDetailDto.properties.${f}`),
  'AttachmentDto.properties.fileName',
  'AttachmentDto.properties.contentType',
  // An aggregate's group is an address, a domain or a folder path: archived content too.
  'AggregateGroupDto.properties.key',
].map((p) => `components.schemas.${p}`);

const ATTACHMENT = 'paths./api/v1/emails/{id}/attachments/{attachmentId}';
const ATTACHMENT_TEXT = `${ATTACHMENT}/text`;

/** Each accepted finding: the rule, exactly where, and why SPEC.md leaves no other choice. */
const ACCEPTED: Array<{ code: string; paths: string[]; reason: string }> = [
  {
    code: 'owasp:api4:2023-string-limit',
    paths: [
      ...MESSAGE_TEXT,
      'components.schemas.ProblemDetails.properties.detail',
      'components.schemas.ProblemDetails.properties.instance',
      `${ATTACHMENT}.get.responses.200.headers.Content-Disposition.schema`,
      `${ATTACHMENT}.get.responses.206.headers.Content-Disposition.schema`,
    ],
    reason: 'archived content (and the request path a problem echoes) has no length bound',
  },
  {
    code: 'owasp:api4:2023-string-restricted',
    paths: [
      ...MESSAGE_TEXT,
      'components.schemas.ProblemDetails.properties.title',
      'components.schemas.ProblemDetails.properties.detail',
      'components.schemas.ProblemDetails.properties.instance',
      'paths./api/v1/emails.get.parameters.0.schema',
      'paths./api/v1/emails.get.parameters.4.schema',
      'paths./api/v1/emails/aggregate.get.parameters.0.schema',
      'paths./api/v1/emails/aggregate.get.parameters.4.schema',
      'paths./api/v1/emails/export.get.parameters.0.schema',
      'paths./api/v1/emails/export.get.parameters.4.schema',
      `${ATTACHMENT_TEXT}.get.responses.200.content.text/plain.schema`,
    ],
    reason: 'free text: a query, a folder name, a message, a sentence',
  },
  {
    code: 'owasp:api1:2023-no-numeric-ids',
    paths: [
      'paths./api/v1/accounts/{id}/folders.get.parameters.0.schema',
      'paths./api/v1/emails.get.parameters.3.schema',
      'paths./api/v1/emails/aggregate.get.parameters.3.schema',
      'paths./api/v1/emails/export.get.parameters.3.schema',
      'paths./api/v1/emails/{id}.get.parameters.0.schema',
      'paths./api/v1/emails/{id}/thread.get.parameters.0.schema',
      'paths./api/v1/emails/{id}/raw.get.parameters.0.schema',
      `${ATTACHMENT}.get.parameters.0.schema`,
      `${ATTACHMENT}.get.parameters.1.schema`,
      `${ATTACHMENT_TEXT}.get.parameters.0.schema`,
      `${ATTACHMENT_TEXT}.get.parameters.1.schema`,
    ],
    reason: 'SPEC.md, “Resources and their fields”: ids are int32',
  },
  {
    code: 'owasp:api4:2023-array-limit',
    paths: [
      'paths./api/v1/accounts.get.responses.200.content.application/json.schema',
      'paths./api/v1/accounts/{id}/folders.get.responses.200.content.application/json.schema',
      'components.schemas.FolderNodeDto.properties.children',
      'components.schemas.EmailDetailDto.properties.attachments',
    ],
    reason: 'SPEC.md: every visible account, the whole folder tree, every attachment',
  },
  {
    code: 'owasp:api4:2023-string-limit',
    paths: ['paths./api/v1/emails/export.get.responses.200.content.application/zip.schema'],
    reason: 'an export is a ZIP of up to Api:MaxExportMessages messages: no length bounds it (docs/export.md)',
  },
  {
    code: 'owasp:api8:2023-define-error-validation',
    paths: ['paths./api/v1/accounts.get.responses', 'paths./api/v1/stats.get.responses'],
    reason: 'these operations take no parameters: nothing to answer 400 to',
  },
  {
    code: 'info-contact',
    paths: ['info'],
    reason: "a self-hosted server's contact is its operator's, unknown to the software",
  },
];

test('Spectral (spectral:oas + OWASP API Security) finds nothing beyond what SPEC.md forces', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'spectral-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const document = join(dir, 'openapi.json');
  writeFileSync(document, JSON.stringify(buildOpenApiDocument(defaultSettings({ Api: { Enabled: true } }))));
  // The ruleset by its installed path: Spectral resolves package names against the ruleset's own
  // directory, which is not this repository's.
  // (Its package exports only the ruleset itself: resolved as `require` would, then its ESM twin.)
  const owasp = require.resolve('@stoplight/spectral-owasp-ruleset').replace(/\.js$/, '.mjs');
  const ruleset = join(dir, '.spectral.yaml');
  writeFileSync(ruleset, `extends:\n  - spectral:oas\n  - ${JSON.stringify(owasp)}\n`);
  const cli = join(dirname(require.resolve('@stoplight/spectral-cli/package.json')), 'dist/index.js');
  const out = await run(
    process.execPath,
    [cli, 'lint', document, '--ruleset', ruleset, '--format', 'json', '--quiet'],
    {
      maxBuffer: 16 * 1024 * 1024,
    },
  ).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));
  const findings = JSON.parse(out.stdout || '[]') as Finding[];
  t.true(findings.length > 0, `Spectral ran and reported (stderr: ${out.stderr})`);

  const unexpected = findings
    .filter((f) => !ACCEPTED.some((a) => a.code === f.code && a.paths.includes(f.path.join('.'))))
    .map((f) => `${f.code} at ${f.path.join('.')}: ${f.message}`);
  t.deepEqual(unexpected, [], 'every finding is an accepted one');
  const unused = ACCEPTED.flatMap((a) =>
    a.paths
      .filter((p) => !findings.some((f) => f.code === a.code && f.path.join('.') === p))
      .map((p) => `${a.code} at ${p}`),
  );
  t.deepEqual(unused, [], 'every accepted finding still occurs (remove it from the list and docs once fixed)');
  // What the ruleset reported before this work (96 errors before the bounds) is gone: what is
  // left are the accepted errors above, and none of the classes the bounds fixed.
  for (const code of [
    'owasp:api4:2023-integer-limit-legacy',
    'owasp:api4:2023-integer-format',
    'owasp:api8:2023-define-cors-origin',
    'owasp:api9:2023-inventory-access',
    'owasp:api9:2023-inventory-environment',
  ]) {
    t.false(
      findings.some((f) => f.code === code),
      code,
    );
  }
});
