// The PostgreSQL writer's per-message work ahead of the write (MailWriter.prepare): run by the
// importer where each message is parsed, on a parse thread once the import proves long
// (engine/import/parsers.ts), so that building the side index's document (tokenizing, word
// pairs, the binary tsvector: a third of the importer's thread's time when it was built there)
// runs on every core. The writer uses it as it is (writer.ts).
import type { NewEmail } from '../rules/new-email.js';
import { newEmailDocument } from './search-index.js';

export default function prepare(email: NewEmail): void {
  email.searchDocument = newEmailDocument(email);
}
