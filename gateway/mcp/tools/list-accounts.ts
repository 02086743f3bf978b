// list_accounts: the accounts this key may read.
import { z } from 'zod';
import { MailAccountDto } from '../../../shared/dto.js';
import { wrappedResult } from '../results.js';
import { defineTool, type McpTool } from './define.js';
import { ListOf } from './shapes.js';

export function listAccountsTool(): McpTool {
  return defineTool({
    name: 'list_accounts',
    title: 'List mail accounts',
    description:
      'Lists the archived mail accounts this API key may read, each with id, name, emailAddress, provider, isEnabled and lastSync. ' +
      "Use an account's id as accountId in list_folders and search_emails. The text result is a JSON array.",
    input: z.object({}),
    output: ListOf(MailAccountDto, 'The accounts, the same array as the text result'),
    async run(_args, { service, caller }) {
      const accounts = await service.accounts(caller);
      return wrappedResult(accounts, { items: accounts });
    },
  });
}
