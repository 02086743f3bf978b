import type { Command } from 'commander';

// Placeholder registration: the importer lands with its own module (engine/import/).
export function registerImport(_program: Command): void {}
