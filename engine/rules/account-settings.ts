// What an operator may set on an IMAP account, checked the same way for both stores. Every
// mistake is a StoreError of one sentence that never holds the password.
import type { MailAccountDto } from '../../shared/dto.js';
import { StoreError } from '../../shared/errors.js';
import type { ImapSecurity, SyncOutcome } from './sync-state.js';

export const IMAP_SECURITIES: readonly ImapSecurity[] = ['tls', 'starttls', 'none'];

/** IMAP settings as given: everything but host and password may be left to its default. */
export interface ImapInput {
  host: string;
  /** Default 993 for tls, 143 for starttls and none. */
  port?: number;
  /** Default tls. */
  security?: ImapSecurity;
  /** Default: the account's e-mail address. */
  user?: string;
  password: string;
  /** null or absent: every folder. */
  folders?: string[] | null;
  exclude?: string[];
}

export interface NewImapAccount {
  name: string;
  emailAddress: string;
  isEnabled?: boolean;
  imap: ImapInput;
}

/** `accounts set`: only what is given changes. `imap` fields merge with the stored ones. */
export interface AccountChanges {
  name?: string;
  emailAddress?: string;
  provider?: string;
  isEnabled?: boolean;
  imap?: Partial<ImapInput>;
}

/** An account's IMAP settings without the password: what listings may show. */
export interface ImapPublicSettings {
  host: string;
  port: number;
  security: ImapSecurity;
  user: string;
  folders: string[] | null;
  exclude: string[];
}

/** `accounts list`: the account, its IMAP settings without the password, its sync state, its mail. */
export interface AccountStatus extends MailAccountDto {
  imap: ImapPublicSettings | null;
  lastOutcome: SyncOutcome | null;
  failures: number;
  messages: number;
}

export function defaultPort(security: ImapSecurity): number {
  return security === 'tls' ? 993 : 143;
}

export function checkSecurity(value: string): ImapSecurity {
  const v = value.trim().toLowerCase();
  if (!(IMAP_SECURITIES as readonly string[]).includes(v)) {
    throw new StoreError(`Unknown IMAP security "${value}": use tls, starttls or none.`);
  }
  return v as ImapSecurity;
}

export function checkPort(value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > 65535) {
    throw new StoreError(`The IMAP port must be a whole number from 1 to 65535, not ${value}.`);
  }
  return value;
}

export function checkHost(value: string): string {
  const v = value.trim();
  if (!v || /[\s/]/.test(v)) throw new StoreError(`"${value}" is not an IMAP host name or address.`);
  return v;
}

export function checkPassword(value: string): string {
  if (value.length === 0) throw new StoreError('The IMAP password is empty.');
  return value;
}

/** A folder list: trimmed, '/' as the separator, no empty names, no duplicates. */
export function checkFolders(values: readonly string[], what: string): string[] {
  const out: string[] = [];
  for (const raw of values) {
    const v = raw.trim().replace(/^\/+|\/+$/g, '');
    if (!v) throw new StoreError(`The ${what} list has an empty folder name.`);
    if (!out.includes(v)) out.push(v);
  }
  return out;
}

/** Full settings from a new account's input, defaults filled in. */
export function resolveImap(input: ImapInput, emailAddress: string): ImapPublicSettings & { password: string } {
  const security = checkSecurity(input.security ?? 'tls');
  const folders = input.folders == null ? null : checkFolders(input.folders, 'folders');
  return {
    host: checkHost(input.host),
    port: checkPort(input.port ?? defaultPort(security)),
    security,
    user: (input.user ?? '').trim() || emailAddress.trim(),
    password: checkPassword(input.password),
    folders: folders && folders.length > 0 ? folders : null,
    exclude: checkFolders(input.exclude ?? [], 'exclude'),
  };
}

/**
 * Stored IMAP settings with the changes of `accounts set` applied and checked: only what is
 * given changes, and a port left at its old default follows the security to the new default.
 */
export function changedImap(old: ImapPublicSettings, c: Partial<ImapInput>, emailAddress: string): ImapPublicSettings {
  const security = c.security !== undefined ? checkSecurity(c.security) : old.security;
  const port =
    c.port !== undefined
      ? checkPort(c.port)
      : old.port === defaultPort(old.security)
        ? defaultPort(security)
        : old.port;
  const folders =
    c.folders === undefined ? old.folders : c.folders === null ? null : checkFolders(c.folders, 'folders');
  return {
    host: c.host !== undefined ? checkHost(c.host) : old.host,
    port,
    security,
    user: c.user !== undefined ? c.user.trim() || emailAddress : old.user,
    folders: folders && folders.length > 0 ? folders : null,
    exclude: c.exclude !== undefined ? checkFolders(c.exclude, 'exclude') : old.exclude,
  };
}

/**
 * Mail Archiver (from 2609) may encrypt account secrets at rest, stored as `enc:v1:<base64>`
 * (AES-256-GCM with its own key); a value without the prefix is legacy plaintext. An encrypted
 * one is never tried as an IMAP password: it is not one, and a server would count the failure.
 */
export const encryptedByMailArchiver = (stored: string): boolean => stored.startsWith('enc:');

/** The sync outcome of an account whose only password is Mail Archiver's encrypted one. */
export const encryptedPasswordError = (accountId: number): string =>
  `Account ${accountId}'s IMAP password is encrypted by Mail Archiver, which this service cannot read: give it its own with accounts set ${accountId} --password-stdin.`;
