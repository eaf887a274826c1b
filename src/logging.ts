/**
 * The gateway's pino options in one place: JSON lines on stdout with ISO-8601 timestamps, which log
 * collectors and people read without converting epoch milliseconds (docs/operations.md#logs).
 */
import { stdTimeFunctions, type LoggerOptions } from 'pino';

export function loggerOptions(level: string): LoggerOptions {
  return { level, timestamp: stdTimeFunctions.isoTime };
}

/**
 * The part of a pino logger the layers below HTTP use (dispatch, upstream, experiments, the batch core, reload).
 * A plain interface, like src/state's StateLog, so those layers do not depend on fastify and tests can pass any
 * object that records lines; fastify's `app.log` and `request.log` satisfy it as they are.
 */
export interface Logger {
  /** pino's level name; read to skip building a costly line the level would drop. */
  level: string;
  error(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  debug(obj: object | string, msg?: string): void;
}
