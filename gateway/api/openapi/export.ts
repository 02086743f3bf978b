// The operation that exports a search (docs/export.md): a ZIP of the messages, manifest.csv and export.json.
import type { Settings } from '../../../shared/config.js';
import type { OpenApiOperation } from './model.js';
import { byStatus, COMMON, COMMON_HEADERS, problem } from './responses.js';
import { searchParameters } from './search-parameters.js';

/** GET /api/v1/emails/export */
export function exportEmails(settings: Settings): OpenApiOperation {
  const max = settings.Api.MaxExportMessages;
  const downloads = settings.Api.AllowAttachmentDownloads ? 'enabled' : 'disabled';
  return {
    operationId: 'exportEmails',
    tags: ['Emails'],
    summary: 'Export every message a search matches',
    description:
      'Every message the search matches (the same `q` and filters as `GET /api/v1/emails`; only the accounts visible to the caller; paging and order are ignored), oldest first, as one streamed ZIP (ZIP64 when large): ' +
      '`format=eml-zip` (the default) holds one `messages/<sent date>_<id>.eml` per message; `format=mbox` holds one `export.mbox` (mboxrd). Either way the ZIP ends with `manifest.csv` ' +
      '(id, account, folder, sentDate, from, subject, size, sha256 of the bytes as exported, copy: `original` or `reconstructed`) and `export.json` (the query and filters, who, when, how many, the service version and the SHA-256 of manifest.csv). ' +
      `A message is its original where the archive keeps one, else a reconstruction from the stored fields. At most ${max} messages (\`Api:MaxExportMessages\`). ` +
      `Messages carry their attachments, so exports are refused while attachment downloads are (${downloads} on this server, \`Api:AllowAttachmentDownloads\`). ` +
      'Logged in the access log as one Search (with the parameters and `format`) and one Download per message sent. An addition to SPEC.md; see docs/export.md.',
    parameters: [
      ...searchParameters(settings).filter((p) =>
        ['q', 'from', 'to', 'accountId', 'folder', 'direction'].includes(p.name),
      ),
      {
        name: 'format',
        in: 'query',
        description:
          '`eml-zip` (default): one .eml file per message; `mbox`: one mboxrd file. Both inside a ZIP with the manifest.',
        schema: { type: 'string', enum: ['eml-zip', 'mbox'], default: 'eml-zip' },
      },
    ],
    responses: byStatus({
      '200': {
        description: 'The export, streamed as it is read.',
        headers: {
          'Content-Disposition': {
            description: 'attachment; filename="export-<UTC timestamp>.zip".',
            schema: {
              type: 'string',
              maxLength: 64,
              pattern: '^attachment; filename="export-[0-9]{8}T[0-9]{6}Z\\.zip"$',
            },
          },
          'Cache-Control': { description: '`no-store`.', schema: { type: 'string', enum: ['no-store'] } },
          'X-Content-Type-Options': { description: '`nosniff`.', schema: { type: 'string', enum: ['nosniff'] } },
          ...COMMON_HEADERS,
        },
        content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
      },
      '400': problem('A malformed parameter: an unknown `format`, an unparseable date, a `from` after `to`.'),
      ...COMMON,
      '403': problem(
        'Attachment downloads are disabled on this server (`Api:AllowAttachmentDownloads` is false): so are exports.',
      ),
      '422': problem(
        `The search matches more than \`Api:MaxExportMessages\` (${max}) messages; \`detail\` says how many, and how to narrow the search.`,
      ),
    }),
  };
}
