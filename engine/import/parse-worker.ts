// A parse thread of the importer (engine/import/parsers.ts): a batch of messages in, each one's
// record (or why it could not be parsed) out, in order.
import { answerParseTask, type ParseAnswer, type ParseTask } from './parsers.js';

// The pool hands a thread several batches at once, so that it has work while the importer's
// thread is busy writing and cannot hand over more; they are parsed one after the other, in the
// order given, so the oldest (the one the writer waits for) is answered first.
let previous: Promise<unknown> = Promise.resolve();

async function parseBatch(tasks: ParseTask[]): Promise<ParseAnswer[]> {
  const answers: ParseAnswer[] = [];
  for (const task of tasks) answers.push(await answerParseTask(task));
  return answers;
}

export default function parse(tasks: ParseTask[]): Promise<ParseAnswer[]> {
  const answered = previous.then(() => parseBatch(tasks));
  previous = answered.catch(() => {});
  return answered;
}
