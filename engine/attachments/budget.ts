// How much attachment text one message, and one pass, may cost (docs/security.md, "Mail shaped by an attacker",
// items 1 and 4). Each attachment is bounded on its own (extract.ts: 1,000,000 characters,
// 5 s); this bounds their sum. A message is bounded in characters kept and in wall time spent;
// a pass (one import run, or one account's sync pass) the same, so a message of 300 small DOCX
// files that each expand to a million characters, or of 20 PDFs that each run into the time
// bound, costs what one ordinary message may cost, and a pass of one account cannot hold the
// others back for hours.
import { defaultSettings, type Settings } from '../../shared/config.js';

export interface TextBudgetLimits {
  /** Characters kept per message over all its attachments. */
  charsPerMessage: number;
  /**
   * And at most this many per byte of the raw message (but always MESSAGE_FLOOR_CHARS): a small
   * message cannot keep the text a large one may. 0: no such bound.
   */
  charsPerByte: number;
  /** Characters read per pass; past it the rest is left unread (reindex --attachments reads it). */
  charsPerPass: number;
  /** Wall time reading one message's attachments, and a whole pass's. */
  msPerMessage: number;
  msPerPass: number;
}

/** The Import:AttachmentText* settings as a budget's limits. */
export function textBudgetLimits(s: Settings['Import']): TextBudgetLimits {
  return {
    charsPerMessage: s.AttachmentTextPerMessage,
    charsPerByte: s.AttachmentTextPerMessageByte,
    charsPerPass: s.AttachmentTextPerPass,
    msPerMessage: s.AttachmentTextSecondsPerMessage * 1000,
    msPerPass: s.AttachmentTextSecondsPerPass * 1000,
  };
}

const DEFAULT_TEXT_LIMITS = textBudgetLimits(defaultSettings().Import);

/** Characters any message may keep, however small (a few pages of a real document). */
export const MESSAGE_FLOOR_CHARS = 100_000;

/** What one attachment may still cost, or null when its message's budget is spent. */
export interface Allowance {
  maxChars: number;
  timeoutMs: number;
}

export class TextBudget {
  readonly limits: TextBudgetLimits;
  readonly #now: () => number;
  readonly #started: number;
  #chars = 0;

  constructor(limits: Partial<TextBudgetLimits> = {}, now: () => number = () => performance.now()) {
    this.limits = { ...DEFAULT_TEXT_LIMITS, ...limits };
    this.#now = now;
    this.#started = now();
  }

  /** Whether the pass has spent its characters or its time: nothing more is read in it. */
  get spent(): boolean {
    return this.#chars >= this.limits.charsPerPass || this.#now() - this.#started >= this.limits.msPerPass;
  }

  /** A budget for the next message (of `bytes` raw bytes, when known), within what is left of the pass. */
  message(bytes?: number): MessageBudget {
    const { charsPerMessage, charsPerByte } = this.limits;
    const bySize =
      bytes === undefined || charsPerByte === 0 ? Infinity : Math.max(MESSAGE_FLOOR_CHARS, charsPerByte * bytes);
    return new MessageBudget(this, this.#now, Math.min(charsPerMessage, bySize));
  }

  /** @internal what a message charges to its pass. */
  charge(chars: number): void {
    this.#chars += chars;
  }

  /** @internal what is left of the pass. */
  left(): Allowance {
    return {
      maxChars: Math.max(0, this.limits.charsPerPass - this.#chars),
      timeoutMs: Math.max(0, this.limits.msPerPass - (this.#now() - this.#started)),
    };
  }
}

export class MessageBudget {
  readonly #pass: TextBudget;
  readonly #now: () => number;
  readonly #started: number;
  #chars = 0;

  readonly #maxChars: number;

  constructor(pass: TextBudget, now: () => number, maxChars: number) {
    this.#pass = pass;
    this.#now = now;
    this.#started = now();
    this.#maxChars = maxChars;
  }

  /** What the next attachment may cost (characters, milliseconds); null when the message has spent its budget. */
  next(perAttachment: Allowance): Allowance | null {
    const pass = this.#pass.left();
    const { msPerMessage } = this.#pass.limits;
    const allowance = {
      maxChars: Math.min(perAttachment.maxChars, this.#maxChars - this.#chars, pass.maxChars),
      timeoutMs: Math.min(perAttachment.timeoutMs, msPerMessage - (this.#now() - this.#started), pass.timeoutMs),
    };
    return allowance.maxChars > 0 && allowance.timeoutMs > 0 ? allowance : null;
  }

  /** Characters kept from one attachment. */
  charge(chars: number): void {
    this.#chars += chars;
    this.#pass.charge(chars);
  }
}
