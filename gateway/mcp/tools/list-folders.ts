// list_folders: an account's folder tree, in parts when it does not fit one answer.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { FolderNodeDto } from '../../../shared/dto.js';
import { InvalidInput } from '../../../shared/search-input.js';
import { fittingItems, jsonLength, largestFitting, NOTE_RESERVE } from '../bounds.js';
import { intParam } from '../params.js';
import { withNote, wrappedResult } from '../results.js';
import type { ToolConfig } from './config.js';
import { defineTool, type McpTool } from './define.js';
import { pagingFields } from './shapes.js';

export function listFoldersTool({ bound }: ToolConfig): McpTool {
  return defineTool({
    name: 'list_folders',
    title: 'List the folders of an account',
    description:
      'Lists the folder tree of one archived mail account: each folder has name, fullPath, totalCount (its own messages), level (0 = top) ' +
      "and nested children. Pass a folder's fullPath as folder to search_emails. The text result is a JSON array, empty when the " +
      'account does not exist or this key may not read it. A tree too large for one answer comes in parts: the result then says so and gives ' +
      'nextOffset (top-level folders to skip) for the next call.',
    heavyJob: 'folders',
    input: z.object({
      accountId: intParam('accountId', 'An account id from list_accounts.'),
      offset: intParam(
        'offset',
        'Top-level folders to skip, default 0: the nextOffset of the previous answer, when the tree did not fit one answer.',
      ).optional(),
    }),
    output: z.object({
      items: z.array(FolderNodeDto).meta({ description: 'The top-level folders, the same array as the text result' }),
      total: z
        .number()
        .int()
        .optional()
        .meta({ description: 'Top-level folders of the account, when the tree was split' }),
      ...pagingFields('top-level folders'),
    }),
    async run({ accountId, offset = 0 }, { service, caller }) {
      if (offset < 0) throw new InvalidInput('offset', 'offset must be 0 or more.');
      const folders = (await service.folders(caller, accountId)) ?? [];
      if (offset === 0 && jsonLength(folders) <= bound - NOTE_RESERVE)
        return wrappedResult(folders, { items: folders });
      return folderResult(accountId, folders, offset, bound);
    },
  });
}

/** A folder with its sub-folders below `depth` levels left out (their `children` empty). */
function pruned(node: FolderNodeDto, depth: number): FolderNodeDto {
  return { ...node, children: depth <= 0 ? [] : node.children.map((c) => pruned(c, depth - 1)) };
}
const treeDepth = (node: FolderNodeDto): number => 1 + Math.max(0, ...node.children.map(treeDepth));

/**
 * list_folders within the bound: the top-level folders from `offset` whose whole trees fit; when
 * not even the first one's does, that one with its deepest levels left out, as many as needed.
 */
function folderResult(accountId: number, all: FolderNodeDto[], offset: number, bound: number): CallToolResult {
  const budget = bound - NOTE_RESERVE;
  let { items } = fittingItems(all.slice(offset), budget, []);
  let cutBelow: number | undefined;
  const first = all[offset];
  if (first && (items.length === 0 || jsonLength(items) > budget)) {
    cutBelow = largestFitting(treeDepth(first) - 1, (d) => jsonLength([pruned(first, d)]) <= budget);
    items = [pruned(first, cutBelow)];
  }
  const end = offset + items.length;
  const nextOffset = end < all.length ? end : null;
  const notes = [
    nextOffset === null
      ? `Top-level folders ${offset + 1} to ${end} of ${all.length}: the last of them.`
      : `Top-level folders ${offset + 1} to ${end} of ${all.length}, as many as fit one answer; call list_folders with accountId ${accountId} and offset ${nextOffset} for the next.`,
  ];
  if (cutBelow !== undefined)
    notes.push(
      `${first!.fullPath} has more sub-folders than fit one answer: those more than ${cutBelow} levels below it are left out (shown with no children). search_emails takes any folder's fullPath, and GET /api/v1/accounts/${accountId}/folders returns the whole tree.`,
    );
  return withNote(wrappedResult(items, { items, total: all.length, offset, nextOffset }), notes.join(' '));
}
