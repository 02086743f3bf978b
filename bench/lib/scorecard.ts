// The targets of a benchmark run and what was measured against each, printed as one table at
// the end so that a run's verdict is read in one place.

export interface TargetRow {
  workload: string;
  target: string;
  measured: string;
  met: boolean;
}

export class Scorecard {
  readonly rows: TargetRow[] = [];

  add(workload: string, target: string, measured: string, met: boolean): void {
    this.rows.push({ workload, target, measured, met });
  }

  /** A "≤ limit" target: met when the value is finite and at most the limit. */
  atMost(workload: string, target: string, value: number, limit: number, show: (n: number) => string): void {
    this.add(workload, `${target} ≤ ${show(limit)}`, show(value), Number.isFinite(value) && value <= limit);
  }

  /** A "≥ limit" target. */
  atLeast(workload: string, target: string, value: number, limit: number, show: (n: number) => string): void {
    this.add(workload, `${target} ≥ ${show(limit)}`, show(value), Number.isFinite(value) && value >= limit);
  }

  print(): void {
    console.log('| workload | target | measured | |');
    console.log('|---|---|---:|---|');
    for (const r of this.rows) console.log(`| ${r.workload} | ${r.target} | ${r.measured} | ${verdict(r.met)} |`);
    const missed = this.rows.filter((r) => !r.met).length;
    console.log(`${this.rows.length - missed} of ${this.rows.length} targets met.`);
  }
}

export const verdict = (met: boolean) => (met ? 'met' : '**missed**');
