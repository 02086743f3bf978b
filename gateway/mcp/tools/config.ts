// What the tools are built from: the Mcp settings and what follows from them (the answer bound,
// the largest page of attachment bytes, whether REST serves downloads, the attachment memory).
import type { Settings } from '../../../shared/config.js';
import { ByteBudget } from '../../byte-budget.js';
import { NOTE_RESERVE } from '../bounds.js';

export interface ToolConfig {
  mcp: Settings['Mcp'];
  /** search_emails' page sizes (parseSearchInput's limits). */
  limits: { defaultPageSize: number; maxPageSize: number };
  /** Every result's text stays within this many characters (bounds.ts). */
  bound: number;
  /** The largest page of attachment bytes whose base64 fits the bound, with room for its metadata. */
  maxPageBytes: number;
  /** The REST API serves attachment downloads, so a refusal may point there. */
  restDownloads: boolean;
  /** The attachment bytes held for answers at once (Mcp:MaxConcurrentAttachmentBytes). */
  attachmentMemory: ByteBudget;
}

export function toolConfig(mcp: Settings['Mcp'], api?: Settings['Api']): ToolConfig {
  const bound = mcp.MaxResultChars;
  return {
    mcp,
    limits: { defaultPageSize: mcp.DefaultPageSize, maxPageSize: mcp.MaxResults },
    bound,
    maxPageBytes: Math.max(3, Math.floor((bound - NOTE_RESERVE - 2_000) / 4) * 3),
    restDownloads: api?.Enabled === true && api.AllowAttachmentDownloads,
    attachmentMemory: new ByteBudget(mcp.MaxConcurrentAttachmentBytes, mcp.AttachmentWaitSeconds * 1000),
  };
}
