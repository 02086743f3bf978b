// Outlook's winmail.dat (TNEF, application/ms-tnef): the files inside it, so that a message from
// Outlook shows the attachments its sender attached rather than one opaque file (the original is
// kept too). Only what carries files is read: each attachment's title (its file name) and data.
// MS-OXTNEF: a signature, a key, then attributes: level (1 byte), id (4), length (4), data, and a
// 2-byte checksum; an attachment begins with attAttachRendData.

const SIGNATURE = 0x223e9f78;
const LVL_ATTACHMENT = 2;
const ATT_ATTACH_REND_DATA = 0x00069002;
const ATT_ATTACH_TITLE = 0x00018010;
const ATT_ATTACH_DATA = 0x0006800f;

export interface TnefFile {
  fileName: string;
  content: Buffer;
}

/**
 * The first `maxFiles` files a TNEF stream carries, or null when the bytes are not TNEF or are
 * cut short. Reading stops at the file after the last one taken: a stream of 50,000 files costs
 * what `maxFiles` cost.
 */
export function tnefFiles(data: Buffer, maxFiles = Infinity): TnefFile[] | null {
  if (data.length < 6 || data.readUInt32LE(0) !== SIGNATURE) return null;
  const files: Array<Partial<TnefFile>> = [];
  let at = 6;
  while (at + 9 <= data.length) {
    const level = data[at]!;
    const id = data.readUInt32LE(at + 1);
    const length = data.readUInt32LE(at + 5);
    const start = at + 9;
    if (start + length + 2 > data.length) return null;
    const value = data.subarray(start, start + length);
    if (level === LVL_ATTACHMENT) {
      if (id === ATT_ATTACH_REND_DATA) {
        if (files.length >= maxFiles) break;
        files.push({});
      }
      const current = files.at(-1);
      if (current && id === ATT_ATTACH_TITLE) current.fileName = value.toString('latin1').replace(/\0.*$/s, '');
      if (current && id === ATT_ATTACH_DATA) current.content = Buffer.from(value);
    }
    at = start + length + 2;
  }
  return files
    .filter((f): f is TnefFile => f.content !== undefined)
    .map((f, i) => ({ fileName: f.fileName?.trim() || `attachment-${i + 1}.bin`, content: f.content }));
}
