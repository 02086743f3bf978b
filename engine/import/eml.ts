// Single-message files: `.eml` (RFC 5322 as saved by mail clients), one message per file.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export const isEmlName = (name: string): boolean => /\.eml$/i.test(name);

/** The .eml files directly inside `dir`, in name order (sub-directories are not searched). */
export function listEmlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => (e.isFile() || e.isSymbolicLink()) && isEmlName(e.name) && !e.name.startsWith('.'))
    .map((e) => join(dir, e.name))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}
