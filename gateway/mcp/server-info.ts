// What the MCP server says about itself in its `initialize` answer.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Implementation } from '@modelcontextprotocol/server';

const PRODUCT = 'mail-archive-gateway';

/**
 * The product's version from its package.json, read once. The file is found by walking up from
 * this module, because it sits at a different depth under dist/ than in the source tree.
 */
function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === PRODUCT && pkg.version) return pkg.version;
    } catch {
      // No package.json here (or not ours): keep walking up.
    }
    const parent = dirname(dir);
    if (parent === dir) return '0.0.0';
    dir = parent;
  }
}

export const SERVER_INFO: Implementation = {
  name: PRODUCT,
  title: 'Mail archive (read-only)',
  version: packageVersion(),
};

/** Two sentences an agent reads once: what is here, and how to page through it. */
export const INSTRUCTIONS =
  'Read-only access to an email archive: list_accounts and list_folders show the accounts and folders this API key may read, ' +
  'search_emails finds messages, get_email opens one by id, get_thread lists its conversation, and get_attachment returns an attachment as base64. ' +
  'search_emails returns one page at a time with page, pageSize, totalItems and totalPages; to see more, repeat the call ' +
  'with the same arguments and page + 1 until page equals totalPages.';
