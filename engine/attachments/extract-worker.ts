// The extractor thread (extractor.ts starts it): one attachment at a time, in order.
import { parentPort } from 'node:worker_threads';
import { extractText, type ExtractLimits } from './extract.js';

export interface ExtractRequest {
  id: number;
  bytes: Uint8Array;
  contentType: string;
  fileName: string;
  limits: ExtractLimits;
}

// pdf.js inflates Flate and Brotli streams with DecompressionStream when there is one, and falls
// back to its own JavaScript decoder when constructing one fails. Node's DecompressionStream is a
// native zlib handle, and this thread is terminated when an attachment overruns its time bound: a
// termination that lands between the handle's creation and its initialisation aborts the whole
// process in the thread's cleanup (Node 24: `node_zlib.cc ... Assertion failed: init_done_ &&
// "close before init"`, about one termination in a hundred here). Without it, pdf.js decodes in
// JavaScript, which a termination can stop anywhere.
Reflect.deleteProperty(globalThis, 'DecompressionStream');

// The readers are loaded before the first attachment, and the thread says when it is ready: the
// time bound of an attachment (extractor.ts) must not be spent loading pdf.js (about 2 MB of
// JavaScript, seconds on a busy machine).
await Promise.all([import('pdfjs-dist/legacy/build/pdf.mjs'), import('mammoth'), import('../import/parse.js')]);
parentPort!.postMessage({ ready: true });

parentPort!.on('message', (req: ExtractRequest) => {
  void extractText(req.bytes, req.contentType, req.fileName, req.limits).then((result) =>
    parentPort!.postMessage({ id: req.id, result }),
  );
});
