// What a key name may be, for every place a key is named (the CLI, the web page, both stores):
// printable text. Control characters would reach terminals raw (`keys list` printing escape
// sequences or fake rows) and bidirectional overrides would make a name read as another.

export const MAX_KEY_NAME_LENGTH = 100;

/** C0 and C1 controls, DEL, line and paragraph separators, and the bidirectional formatting marks. */
export const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** Why a (trimmed) key name is refused, or null when it is fine. */
export function keyNameProblem(name: string): string | null {
  if (!name) return 'A key needs a name.';
  if (name.length > MAX_KEY_NAME_LENGTH) return `A key name is at most ${MAX_KEY_NAME_LENGTH} characters.`;
  if (UNPRINTABLE.test(name))
    return 'A key name must be printable text: no control characters, line breaks or direction marks.';
  return null;
}

/** Active keys (neither revoked nor expired) one user may hold by default (Web:MaxActiveKeysPerUser). */
export const DEFAULT_MAX_ACTIVE_KEYS = 100;

/** The refusal of a key beyond the cap. */
export const tooManyKeys = (username: string, max: number) =>
  `${username} already has ${max} active keys, the most allowed (Web:MaxActiveKeysPerUser); revoke one first.`;

/** Text with every unprintable character written as \u{…}, for terminals and logs. */
export function printable(text: string): string {
  return text.replace(new RegExp(UNPRINTABLE.source, 'gu'), (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}
