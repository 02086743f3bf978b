// MCP endpoint placeholder: answers 404 until the MCP server lands.
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Settings } from '../../shared/config.js';
import type { ArchiveService } from '../archive-service.js';
import type { RateLimiter } from '../rate-limit.js';

export function mcpEndpoint(_settings: Settings, _service: ArchiveService, _limiter: RateLimiter, _logger: Logger): Middleware {
  return async (_ctx, next) => next();
}
