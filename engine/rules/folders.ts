// The folder tree of one account, built from the folder paths its messages carry.
import type { FolderNodeDto } from '../../shared/dto.js';

/** INBOX first, then case-insensitive alphabetical, at every level. */
function compareFolders(a: FolderNodeDto, b: FolderNodeDto): number {
  const ai = a.name.toUpperCase() === 'INBOX';
  const bi = b.name.toUpperCase() === 'INBOX';
  if (ai !== bi) return ai ? -1 : 1;
  return a.name.localeCompare(b.name, 'en', { sensitivity: 'base' }) || a.name.localeCompare(b.name);
}

/**
 * Nests `a/b/c` paths; parents that hold no mail of their own still appear, with totalCount 0.
 * totalCount is the folder's own messages, not its descendants'.
 */
export function buildFolderTree(counts: ReadonlyArray<{ folder: string; count: number }>): FolderNodeDto[] {
  const roots: FolderNodeDto[] = [];
  const byPath = new Map<string, FolderNodeDto>();
  for (const { folder, count } of counts) {
    const segments = folder.split('/').filter(Boolean);
    let siblings = roots;
    let path = '';
    segments.forEach((name, level) => {
      path = path ? `${path}/${name}` : name;
      let node = byPath.get(path);
      if (!node) {
        node = { name, fullPath: path, totalCount: 0, level, children: [] };
        byPath.set(path, node);
        siblings.push(node);
      }
      if (level === segments.length - 1) node.totalCount += count;
      siblings = node.children;
    });
  }
  const sort = (nodes: FolderNodeDto[]): void => {
    nodes.sort(compareFolders);
    for (const n of nodes) sort(n.children);
  };
  sort(roots);
  return roots;
}
