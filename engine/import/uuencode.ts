// uudecode (POSIX uuencode, historical format): what `Content-Transfer-Encoding: x-uuencode` parts
// and old mailers' attachments carry. A `begin <mode> <name>` line, lines whose first character
// gives their byte count, "`" or " " for the empty line, then `end`.

/** The bytes a uuencoded text stands for, or null when it is not one (no begin line). */
export function uudecode(text: Buffer): Buffer | null {
  const lines = text.toString('latin1').split(/\r?\n/);
  const begin = lines.findIndex((l) => /^begin(?:-base64)? [0-7]{3,4} /.test(l));
  if (begin < 0) return null;
  const out: number[] = [];
  for (const line of lines.slice(begin + 1)) {
    if (line === 'end' || line.startsWith('end ')) break;
    if (line.length === 0) continue;
    const count = (line.charCodeAt(0) - 32) & 63;
    if (count === 0) continue;
    const bytes: number[] = [];
    for (let i = 1; bytes.length < count && i < line.length; i += 4) {
      const c = [0, 1, 2, 3].map((k) => ((line.charCodeAt(i + k) || 32) - 32) & 63);
      bytes.push(
        ((c[0]! << 2) | (c[1]! >> 4)) & 255,
        ((c[1]! << 4) | (c[2]! >> 2)) & 255,
        ((c[2]! << 6) | c[3]!) & 255,
      );
    }
    out.push(...bytes.slice(0, count));
  }
  return Buffer.from(out);
}
