import type { Command } from 'commander';

// Placeholder registration: the demo builder lands with its own module.
export function registerDemo(_program: Command): void {}
