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
