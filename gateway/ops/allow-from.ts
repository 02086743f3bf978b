// Metrics:AllowFrom as a node:net BlockList (used here as an allow list).
import { BlockList } from 'node:net';
import { parseAddressBlock } from '../../shared/config.js';

/** The addresses and CIDR blocks given; config validation has already rejected anything else. */
export function allowList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const block = parseAddressBlock(entry);
    if (!block) throw new Error(`not an address or CIDR block: ${entry}`);
    list.addSubnet(block.address, block.prefix, block.family);
  }
  return list;
}

/**
 * Whether the socket's peer may scrape. BlockList matches an IPv4-mapped IPv6 peer
 * (`::ffff:127.0.0.1`, as a dual-stack listener reports it) against IPv4 entries too.
 */
export function isAllowed(list: BlockList, peer: string | undefined): boolean {
  if (!peer) return false;
  const family = peer.includes(':') ? 'ipv6' : 'ipv4';
  return list.check(peer, family);
}
