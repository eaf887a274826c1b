/** ISO-8601 timestamps: log collectors and people read them without converting (docs/operations.md#logs). */
import { stdTimeFunctions, type LoggerOptions } from 'pino';

export function loggerOptions(level: string): LoggerOptions {
  return { level, timestamp: stdTimeFunctions.isoTime };
}

/** The part of a pino logger the layers below HTTP use, so they do not depend on fastify. */
export interface Logger {
  /** pino's level name; read to skip building a costly line the level would drop. */
  level: string;
  error(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  debug(obj: object | string, msg?: string): void;
}
