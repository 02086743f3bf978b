// The operations tagged Accounts and Stats: the accounts, an account's folders, the statistics.
import { ref, type OpenApiOperation } from './model.js';
import { byStatus, COMMON, ok, pathId, problem } from './responses.js';

/** GET /api/v1/accounts */
export function listAccounts(): OpenApiOperation {
  return {
    operationId: 'listAccounts',
    tags: ['Accounts'],
    summary: 'List mail accounts',
    description:
      'The mail accounts visible to the caller: all of them for an administrator, the assigned ones otherwise. Credentials are never returned.',
    responses: byStatus({
      '200': ok('The accounts visible to the caller.', { type: 'array', items: ref('MailAccountDto') }),
      ...COMMON,
    }),
  };
}

/** GET /api/v1/accounts/{id}/folders */
export function listFolders(): OpenApiOperation {
  return {
    operationId: 'listFolders',
    tags: ['Accounts'],
    summary: "List an account's folders",
    description: "The account's folder tree: root folders, each with its sub-folders in `children`.",
    parameters: [pathId('id', 'Account id.')],
    responses: byStatus({
      '200': ok('The folder tree of the account.', { type: 'array', items: ref('FolderNodeDto') }),
      '400': problem('`id` is not a 32-bit integer.'),
      ...COMMON,
      '404': problem('The account does not exist or is not visible to the caller.'),
    }),
  };
}

/** GET /api/v1/stats */
export function getStats(): OpenApiOperation {
  return {
    operationId: 'getStats',
    tags: ['Stats'],
    summary: 'Archive statistics',
    description:
      'Counts of messages, accounts and attachments. Administrators see global totals and the database size; other keys see counts scoped to their assigned accounts and an empty `databaseSizeInMB`.',
    responses: byStatus({
      '200': ok('The statistics visible to the caller.', ref('StatsDto')),
      ...COMMON,
    }),
  };
}
