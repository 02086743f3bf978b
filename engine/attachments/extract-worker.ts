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

parentPort!.on('message', (req: ExtractRequest) => {
  void extractText(req.bytes, req.contentType, req.fileName, req.limits).then((result) =>
    parentPort!.postMessage({ id: req.id, result }),
  );
});
