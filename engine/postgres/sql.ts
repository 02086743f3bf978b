// SQL text with its parameters, built by a tagged template: `sql\`... WHERE "Id" = ${id}\``.
// Values become $1, $2, ... in order; a nested Sql fragment is spliced in with its own values
// renumbered. User input therefore never reaches the SQL text, whatever the query's shape.

export class Sql {
  constructor(
    readonly parts: readonly string[],
    readonly values: readonly unknown[],
    /** Planner settings for this statement alone (SET LOCAL in its own transaction); see planned(). */
    readonly settings?: Readonly<Record<string, string>>,
    /** Run often enough to be prepared once per connection; see reused(). */
    readonly reuse = false,
  ) {}

  /** The text and values pg's query() takes. */
  toQuery(): { text: string; values: unknown[] } {
    let text = this.parts[0]!;
    for (let i = 0; i < this.values.length; i++) text += `$${i + 1}${this.parts[i + 1]!}`;
    return { text, values: [...this.values] };
  }
}

export function sql(strings: TemplateStringsArray, ...args: unknown[]): Sql {
  const parts: string[] = [strings[0]!];
  const values: unknown[] = [];
  args.forEach((arg, i) => {
    const next = strings[i + 1]!;
    if (arg instanceof Sql) {
      parts[parts.length - 1] += arg.parts[0]!;
      arg.values.forEach((v, j) => {
        values.push(v);
        parts.push(arg.parts[j + 1]!);
      });
      parts[parts.length - 1] += next;
    } else {
      values.push(arg);
      parts.push(next);
    }
  });
  return new Sql(parts, values);
}

/**
 * The statement run with planner settings of its own, e.g. `{ enable_seqscan: 'off' }` where
 * the planner's estimate is known to be wrong for our data. Names and values come from code.
 */
export const planned = (q: Sql, settings: Record<string, string>): Sql => new Sql(q.parts, q.values, settings);

/**
 * A statement sent on nearly every request (a search's page, the present, the side index's
 * leaves; the key lookup): prepared once on each connection and then only executed, so the
 * server stops parsing and planning it each time (engine/postgres/prepared.ts; a snapshot
 * session by PREPARE, one statement on a pool by the driver). Every value must carry a cast or
 * meet a typed column, so that PREPARE can infer its type.
 */
export const reused = (q: Sql): Sql => new Sql(q.parts, q.values, q.settings, true);

/** Trusted SQL text (identifiers, keywords chosen by code, never by input). */
export const raw = (text: string): Sql => new Sql([text], []);

/** Fragments joined by a separator (` AND `, `, `); empty gives `empty`. */
export function join(fragments: readonly Sql[], separator: string, empty = ''): Sql {
  if (fragments.length === 0) return raw(empty);
  return fragments.reduce((acc, f) => sql`${acc}${raw(separator)}${f}`);
}
