// The operations on messages: search, aggregate, one message, its conversation.
import type { Settings } from '../../../shared/config.js';
import { AGGREGATE_LIMIT_DEFAULT, AGGREGATE_LIMIT_MAX, GROUP_BY, MAX_THREAD_LENGTH } from '../../../shared/jobs.js';
import { ref, type OpenApiOperation } from './model.js';
import { byStatus, COMMON, headerRef, int32, notModified, ok, pathId, problem } from './responses.js';
import { searchParameters } from './search-parameters.js';

/** GET /api/v1/emails */
export function searchEmails(settings: Settings): OpenApiOperation {
  return {
    operationId: 'searchEmails',
    tags: ['Emails'],
    summary: 'Search archived emails',
    description:
      'Full-text and filtered search over the messages of the accounts visible to the caller, one page at a time. Logged in the access log as Search.',
    parameters: searchParameters(settings),
    responses: byStatus({
      '200': ok(
        'One page of matching messages. A page past the last one has an empty `items` array.',
        ref('PagedResultDtoOfEmailSummaryDto'),
      ),
      '400': problem(
        'A malformed parameter, such as an unparseable date, a `from` after `to`, an unknown `sortBy` or a non-integer `page`.',
      ),
      ...COMMON,
    }),
  };
}

/** GET /api/v1/emails/aggregate */
export function aggregateEmails(settings: Settings): OpenApiOperation {
  return {
    operationId: 'aggregateEmails',
    tags: ['Emails'],
    summary: 'Count archived emails by group',
    description:
      'The messages a search would find (the same `q` and filters; only the accounts visible to the caller), counted by `groupBy`: the largest groups with exact counts, most messages first, equal counts ordered by key; for `year`, `month` and `week` the latest periods, in time order (oldest first). ' +
      "`from`: the sender address (the first `<address>` of From, else its first address), lower-cased; `fromDomain`: its part after `@`; `to`: each distinct address of To, so a message counts once in each of its recipients' groups; `folder`: full path; `account`: account id; `year`, `month` (`2024-03`), `week` (ISO 8601 week of the sent date in UTC, `2024-W09`); `hasAttachments`: `true` or `false`. " +
      '`total` counts the matching messages once each. An addition to SPEC.md. Logged in the access log as Search, with its parameters. See docs/search.md.',
    parameters: [
      ...searchParameters(settings).filter((p) =>
        ['q', 'from', 'to', 'accountId', 'folder', 'direction'].includes(p.name),
      ),
      {
        name: 'groupBy',
        in: 'query',
        required: true,
        description: `What to group by (case-insensitive): ${GROUP_BY.map((g) => `\`${g}\``).join(', ')}. Any other value, or none, is a 400.`,
        schema: { type: 'string', enum: [...GROUP_BY] },
      },
      {
        name: 'limit',
        in: 'query',
        description: `How many of the largest groups (for a date grouping, the latest periods) to return. 0 (the default) means ${AGGREGATE_LIMIT_DEFAULT}; other values are clamped to [1, ${AGGREGATE_LIMIT_MAX}].`,
        schema: { ...int32, default: 0 },
      },
    ],
    responses: byStatus({
      '200': ok(
        'The largest groups (date groupings: the latest periods, in time order) and the number of matching messages.',
        ref('AggregateResultDto'),
      ),
      '400': problem('A malformed parameter: no or an unknown `groupBy`, an unparseable date, a non-integer `limit`.'),
      ...COMMON,
    }),
  };
}

/** GET /api/v1/emails/{id} */
export function getEmail(): OpenApiOperation {
  return {
    operationId: 'getEmail',
    tags: ['Emails'],
    summary: 'Get one email',
    description:
      'One message with cc, bcc, received date, message id, bodies and attachment metadata. `htmlBody` is raw and unsanitized: treat it as untrusted. Logged in the access log as Open.',
    parameters: [pathId('id', 'Email id.')],
    responses: byStatus({
      '200': ok('The message.', ref('EmailDetailDto'), { ETag: headerRef('ETag') }),
      '304': notModified('the message'),
      '400': problem('`id` is not a 32-bit integer.'),
      ...COMMON,
      '404': problem('The message does not exist or its account is not visible to the caller.'),
    }),
  };
}

/** GET /api/v1/emails/{id}/thread */
export function getThread(): OpenApiOperation {
  return {
    operationId: 'getThread',
    tags: ['Emails'],
    summary: "Get an email's conversation",
    description:
      'The conversation the message belongs to, oldest first (by sent date, then id), the message itself included: the messages of its account linked to it by Message-ID, References and In-Reply-To, or joined by subject (reply prefixes stripped, within 30 days). ' +
      `At most ${MAX_THREAD_LENGTH.toLocaleString('en')} messages (the oldest). Only messages the caller may see. Logged in the access log as Search, with \`thread\` (the id) as its parameter. See docs/search.md.`,
    parameters: [pathId('id', 'Email id: any message of the conversation.')],
    responses: byStatus({
      '200': ok('The messages of the conversation, oldest first.', {
        type: 'array',
        items: ref('EmailSummaryDto'),
        maxItems: MAX_THREAD_LENGTH,
      }),
      '400': problem('`id` is not a 32-bit integer.'),
      ...COMMON,
      '404': problem('The message does not exist or its account is not visible to the caller.'),
    }),
  };
}
