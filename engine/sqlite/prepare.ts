// The SQLite writer's per-message work ahead of the write (MailWriter.prepare): run by the
// importer where each message is parsed, on a parse thread once the import proves long
// (engine/import/parsers.ts), so that packing the bodies (body-codec.ts) does not slow the one
// thread that writes. The writer uses what it finds (writer.ts) and packs what it does not.
import type { NewEmail } from '../rules/new-email.js';
import { packedBodies } from './body-codec.js';

export default function prepare(email: NewEmail): void {
  email.packedBodies = packedBodies(email);
}
