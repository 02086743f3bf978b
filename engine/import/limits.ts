// The Import:* settings (shared/config.ts) as the importer and the sync use them: what one
// message, and one pass, may cost (docs/security.md, "Mail shaped by an attacker").
import { defaultSettings, type Settings } from '../../shared/config.js';
import { textBudgetLimits, type TextBudgetLimits } from '../attachments/budget.js';

export interface ImportLimits {
  /** A larger message is skipped, recorded with its size. */
  maxMessageBytes: number;
  /** Files taken out of one winmail.dat. */
  maxTnefFiles: number;
  /** Attachment text per message and per pass (engine/attachments/budget.ts). */
  text: TextBudgetLimits;
}

export function importLimits(s: Settings['Import']): ImportLimits {
  return {
    maxMessageBytes: s.MaxMessageBytes,
    maxTnefFiles: s.MaxTnefFiles,
    text: textBudgetLimits(s),
  };
}

export const DEFAULT_IMPORT_LIMITS: ImportLimits = importLimits(defaultSettings().Import);

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/** Why a message of `bytes` is not archived, as the end of a sentence. */
export const tooLargeReason = (bytes: number, max: number) =>
  `it is ${megabytes(bytes)} (${bytes} bytes), above Import:MaxMessageBytes (${megabytes(max)})`;
