// HTML built by a tagged template that escapes every interpolated value. Only values that are
// themselves the output of `html` pass through unescaped, so user input (key names, usernames)
// can never become markup by accident.

export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

const SPECIAL = /[&<>"'`]/;

export function escapeHtml(text: string): string {
  // Most values (dates, ids, plain names) have nothing to escape: no replace() call for them.
  return SPECIAL.test(text) ? text.replace(/[&<>"'`]/g, (c) => ENTITIES[c]!) : text;
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}
