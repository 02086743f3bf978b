// What a client's network address is, for budgets and for the fetches a stranger may ask for
// (docs/security.md, "Budgets per address" and "Client ID Metadata Documents"). Addresses are
// classified by ipaddr.js, the library Koa's own proxy handling (proxy-addr) parses them with,
// rather than by a list of our own that misses the forms IPv4 takes inside IPv6.
import ipaddr from 'ipaddr.js';

/**
 * The partition a per-address budget charges: an IPv4 address as it is (an IPv4-mapped IPv6
 * address is its IPv4 one), an IPv6 address by its /64. One IPv6 host is handed a whole /64
 * (RFC 4291 section 2.5.1, RFC 7421), so a budget keyed by the full address would give it
 * 2^64 budgets.
 */
export function addressPartition(ip: string): string {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.process(ip);
  } catch {
    return `ip:${ip}`;
  }
  if (address.kind() === 'ipv4') return `ip:${address.toString()}`;
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4);
  return `ip6:${parts.map((p) => p.toString(16)).join(':')}::/64`;
}

/**
 * Whether an address is one a server may be asked to connect to on a stranger's behalf: a
 * public unicast address. Everything ipaddr.js classifies otherwise is refused: loopback,
 * private and carrier-grade NAT ranges, link-local (cloud metadata services), multicast,
 * reserved, and the IPv6 forms that carry an IPv4 address, whose IPv4 side the check would
 * otherwise never see: IPv4-mapped, NAT64 (64:ff9b::/96), 6to4 (2002::/16), Teredo
 * (2001::/32). Two ranges ipaddr.js 1.x does not name are added: IPv4-compatible IPv6
 * (::a.b.c.d, ::/96, deprecated by RFC 4291 section 2.5.5.1 but still routed to IPv4 by some
 * stacks) and IPv4 benchmarking (198.18.0.0/15, RFC 2544).
 */
export function isPublicAddress(ip: string): boolean {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(ip);
  } catch {
    return false;
  }
  if (address.range() !== 'unicast') return false;
  if (address.kind() === 'ipv4') return !(address as ipaddr.IPv4).match(ipaddr.IPv4.parse('198.18.0.0'), 15);
  return !(address as ipaddr.IPv6).match(ipaddr.IPv6.parse('::'), 96);
}
