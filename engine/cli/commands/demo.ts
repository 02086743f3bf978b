import type { Command } from 'commander';
import { resolve } from 'node:path';
import { describeWhere, storeKind } from '../../archive.js';
import { buildDemoArchive, DEFAULT_DEMO_MESSAGES, MAX_DEMO_MESSAGES, MIN_DEMO_MESSAGES } from '../../demo/build.js';
import { issueDemoKeys } from '../../demo/keys.js';
import { formatDemoArchive, formatKeys } from '../../demo/report.js';
import { archivePath, parseId, printJson, UsageError, withArchive } from '../context.js';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'build a demo archive of generated mail, with users and API keys, into an empty archive file or PostgreSQL database',
    )
    .option(
      '--messages <n>',
      `how many messages (${MIN_DEMO_MESSAGES} to ${MAX_DEMO_MESSAGES})`,
      String(DEFAULT_DEMO_MESSAGES),
    )
    .option('--json', 'print the accounts, users with passwords, and keys as JSON')
    .action(async (opts: { messages: string; json?: boolean }, cmd: Command) => {
      const messages = parseId(opts.messages, '--messages');
      if (messages < MIN_DEMO_MESSAGES || messages > MAX_DEMO_MESSAGES) {
        throw new UsageError(
          `--messages must be between ${MIN_DEMO_MESSAGES} and ${MAX_DEMO_MESSAGES}, not ${messages}.`,
        );
      }
      const { demo, keys } = await withArchive(
        cmd,
        async (archive) => {
          const built = await buildDemoArchive(archive, {
            messages,
            onWarning: (message) => process.stderr.write(`mail-archive: warning: ${message}\n`),
          });
          return { demo: built, keys: await issueDemoKeys(archive, 'demo') };
        },
        { create: true },
      );
      // A PostgreSQL archive is named by host, port and database: never its credentials.
      const where = archivePath(cmd);
      const path = storeKind(where) === 'postgres' ? describeWhere(where) : resolve(where);
      if (opts.json) printJson({ archive: path, ...demo, seconds: Math.round(demo.seconds * 1000) / 1000, keys });
      else process.stdout.write(`${formatDemoArchive(path, demo)}\n${formatKeys(keys)}`);
    });
}
