// The columns of a message's summary in SQLite's emails table (engine/rules/summary.ts maps them).
export const SUMMARY_COLUMNS = `e.id, e.account_id, e.subject, e.from_addr, e.to_addr, e.sent_date,
  e.is_outgoing, e.has_attachments, e.folder`;
