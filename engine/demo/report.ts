// What the demo commands print for people (scripts use --json).
import type { DemoArchive } from './build.js';
import type { DemoKeys, IssuedKey } from './keys.js';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map(
      (r) =>
        `  ${r
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd()}`,
    )
    .join('\n');
}

export function formatDemoArchive(path: string, demo: DemoArchive): string {
  const accounts = table(
    demo.accounts.map((a) => [String(a.id), a.name, a.emailAddress, a.provider, plural(a.messages, 'message')]),
  );
  const users = table(
    demo.users.map((u) => [
      u.username,
      u.isAdmin
        ? 'administrator, sees every account'
        : `sees account${u.accountIds.length === 1 ? '' : 's'} ${u.accountIds.join(', ')}`,
      `password ${u.password}`,
    ]),
  );
  return [
    `Built the demo archive ${path}: ${plural(demo.messages, 'message')} in ${plural(demo.accounts.length, 'account')} in ${demo.seconds.toFixed(1)} s.`,
    '',
    'Mail accounts:',
    accounts,
    '',
    'Users (web sign-in passwords, shown only now):',
    users,
    '',
  ].join('\n');
}

const who = (k: IssuedKey) =>
  k.accountIds === null ? 'administrator, sees every account' : `sees accounts ${k.accountIds.join(', ')}`;

export function formatKeys(keys: DemoKeys): string {
  const lines = [
    'API keys (shown only now; only their hashes are stored):',
    `  ADMIN_KEY=${keys.admin.key}   # ${keys.admin.username}, ${who(keys.admin)}`,
  ];
  if (keys.restricted)
    lines.push(`  USER_KEY=${keys.restricted.key}    # ${keys.restricted.username}, ${who(keys.restricted)}`);
  else lines.push('  (no restricted user with an account exists, so there is no USER_KEY)');
  return `${lines.join('\n')}\n`;
}
