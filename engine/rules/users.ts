// The rules for users both stores keep: what a user row says, and what a new name or contact
// address must be.
import { StoreError } from '../../shared/errors.js';

export interface UserRow {
  id: number;
  username: string;
  email: string | null;
  isAdmin: boolean;
  isActive: boolean;
  createdAt: string;
  accountIds: number[];
}

/** Loose on purpose: one @, something either side, no spaces. */
export const EMAIL_ADDRESS = /^[^\s@]+@[^\s@]+$/;

/** A new user's name as stored (trimmed, NFC), or a StoreError; the same rule on every store. */
export function checkUsername(input: string): string {
  const username = input.trim().normalize('NFC');
  if (!/^[\p{L}\p{N}._@-]{1,64}$/u.test(username)) {
    throw new StoreError(`Invalid username "${input}": use 1 to 64 letters, digits, dots, dashes, underscores or @.`);
  }
  return username;
}

/** A new user's contact address (trimmed; empty means none), or a StoreError. */
export function checkEmail(input: string | null | undefined): string | null {
  const email = input?.trim() || null;
  if (email !== null && !EMAIL_ADDRESS.test(email)) throw new StoreError(`"${input}" is not an e-mail address.`);
  return email;
}

/** Usernames match case-insensitively in every script and whatever the Unicode normal form. */
export const foldName = (name: string): string => name.normalize('NFC').toLowerCase();
