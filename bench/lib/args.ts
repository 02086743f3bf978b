// Numeric command-line options of the benchmarks: `--name value`.

/** `--name value` as a number; positive, or at least 0 with `{ zero: true }`. */
export function arg(name: string, fallback: number, options: { zero?: boolean } = {}): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v < 0 || (v === 0 && !options.zero))
    throw new Error(`${name} must be a ${options.zero ? 'number of at least 0' : 'positive number'}`);
  return v;
}
