// Mail text made safe to print at a terminal (docs/search.md, "From the command line"). Mail is
// written by strangers: an escape sequence in a subject or body would otherwise reach the terminal
// raw and could recolour or clear the screen, move the cursor to overwrite lines already printed,
// set the window title, or (OSC 52) write to the clipboard. Every ECMA-48 escape sequence is
// removed whole, then every remaining control character; line breaks and tabs stay in bodies.
// strip-ansi's pattern was not used: it is made for colour codes and leaves the payload of the
// string sequences (DCS, SOS, PM, APC) on the screen.

/**
 * CSI (ESC [ or C1 0x9B) with its parameters, intermediates and final byte; the string sequences
 * OSC, DCS, SOS, PM, APC (ESC ] P X ^ _ or their C1 forms) up to their terminator (BEL, ESC \ or
 * ST), or up to the end of the line when unterminated (a terminal would swallow the rest, which
 * here would hide mail text); and any other ESC with its intermediates and final byte.
 */
const ESCAPE_SEQUENCE = new RegExp(
  [
    '(?:\\u001b\\[|\\u009b)[\\u0030-\\u003f]*[\\u0020-\\u002f]*[\\u0040-\\u007e]?',
    '(?:\\u001b[\\]PX^_]|[\\u0090\\u0098\\u009d\\u009e\\u009f])[^\\u0007\\u001b\\u009c\\n]*(?:\\u0007|\\u001b\\\\|\\u009c)?',
    '\\u001b[\\u0020-\\u002f]*[\\u0030-\\u007e]?',
  ].join('|'),
  'g',
);

/**
 * What is left to remove once sequences are gone: C0 controls but tab and line feed, DEL, C1
 * controls, and the bidirectional embeddings, overrides and isolates (they reorder the text after
 * them, so a line would read as something else).
 */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** A body as lines: escapes and controls removed, CR LF, lone CR and U+2028/2029 as line feeds. */
export function terminalText(text: string): string {
  return text
    .replace(/\r\n?|[\u2028\u2029]/g, '\n')
    .replace(ESCAPE_SEQUENCE, '')
    .replace(CONTROL, '');
}

/** A header field on one line: as terminalText, with line breaks and tabs as spaces. */
export function terminalLine(text: string): string {
  return terminalText(text).replace(/[\n\t]+/g, ' ');
}
