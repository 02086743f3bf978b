// Where this service is, as OAuth names it: Server:PublicUrl when set (what a reverse proxy
// publishes), else the protocol and Host header of the request (Koa's, which believes
// X-Forwarded-Proto and X-Forwarded-Host only with Server:TrustProxy).
import type { Context } from 'koa';
import type { Settings } from '../../shared/config.js';

/** The issuer, and the origin of every endpoint and of the resource: no trailing slash. */
export const publicBase = (ctx: Context, settings: Settings): string =>
  settings.Server.PublicUrl ?? `${ctx.protocol}://${ctx.host}`;

/** The RFC 8707 resource identifier of the MCP server: the only resource tokens are for. */
export const mcpResource = (ctx: Context, settings: Settings): string => `${publicBase(ctx, settings)}/mcp`;

/** A resource parameter names this server's /mcp (one trailing slash aside). */
export const isOurResource = (value: string, ctx: Context, settings: Settings): boolean =>
  value.replace(/\/$/, '') === mcpResource(ctx, settings);
