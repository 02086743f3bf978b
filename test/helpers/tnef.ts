// A winmail.dat as Outlook writes one (MS-OXTNEF): attributes, each with its checksum.

export function tnef(files: Array<{ name: string; data: Buffer }>): Buffer {
  const attribute = (level: number, id: number, data: Buffer) => {
    const head = Buffer.alloc(9);
    head[0] = level;
    head.writeUInt32LE(id, 1);
    head.writeUInt32LE(data.length, 5);
    const checksum = Buffer.alloc(2);
    checksum.writeUInt16LE(data.reduce((sum, byte) => (sum + byte) & 0xffff, 0));
    return Buffer.concat([head, data, checksum]);
  };
  const start = Buffer.alloc(6);
  start.writeUInt32LE(0x223e9f78, 0);
  start.writeUInt16LE(0x1234, 4);
  return Buffer.concat([
    start,
    attribute(1, 0x00089006, Buffer.from([1, 0, 0, 0])), // attTnefVersion
    attribute(1, 0x00078008, Buffer.from('IPM.Microsoft Mail.Note\0', 'latin1')), // attMessageClass
    ...files.flatMap((f) => [
      attribute(2, 0x00069002, Buffer.alloc(14)), // attAttachRendData: a new attachment
      attribute(2, 0x00018010, Buffer.from(`${f.name}\0`, 'latin1')), // attAttachTitle
      attribute(2, 0x0006800f, f.data), // attAttachData
    ]),
  ]);
}
