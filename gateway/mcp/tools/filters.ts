// The filters search_emails and aggregate_emails share.
import { enumParam, intParam, stringParam } from '../params.js';

/** The filters search_emails and aggregate_emails share (SPEC.md, “Tool search_emails”). */
export function filterParams() {
  return {
    from: stringParam(
      'from',
      'Sent on or after: a date (YYYY-MM-DD) or an ISO 8601 date-time, UTC unless it names an offset.',
    ).optional(),
    to: stringParam(
      'to',
      'Sent on or before: a date (YYYY-MM-DD, covering that whole day) or an ISO 8601 date-time.',
    ).optional(),
    accountId: intParam('accountId', 'Only this account: an account id from list_accounts.').optional(),
    folder: stringParam(
      'folder',
      'Only this folder, by the fullPath list_folders gives (e.g. INBOX/Invoices); sub-folders are not included.',
    ).optional(),
    direction: enumParam(
      'direction',
      ['incoming', 'outgoing'],
      'Only received (incoming) or only sent (outgoing) messages.',
    ).optional(),
  };
}
