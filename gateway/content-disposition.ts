// RFC 6266 Content-Disposition for untrusted file names: an ASCII fallback in `filename` and
// the exact name, UTF-8 percent-encoded, in `filename*` (RFC 8187).

const ATTR_CHAR = /[A-Za-z0-9!#$&+.^_`|~-]/;

function encodeRfc8187(value: string): string {
  let out = '';
  for (const ch of value) {
    if (ATTR_CHAR.test(ch)) out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function contentDisposition(fileName: string, type: 'attachment' | 'inline' = 'attachment'): string {
  // Path separators, control characters and bidirectional formatting marks never belong in a
  // saved file's name: "\u202Etxt.exe" would show as "exe.txt" and run as a program.
  const name =
    fileName
      .replace(/[\u0000-\u001f\u007f-\u009f/\\\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, '_')
      .trim() || 'attachment';
  const fallback = name.replace(/[^\x20-\x7e]/g, '_').replace(/["%]/g, '_');
  return `${type}; filename="${fallback}"; filename*=UTF-8''${encodeRfc8187(name)}`;
}
