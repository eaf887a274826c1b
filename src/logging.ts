/**
 * The gateway's pino options in one place: JSON lines on stdout with ISO-8601 timestamps, which log
 * collectors and people read without converting epoch milliseconds (README "Logs").
 */
import { stdTimeFunctions, type LoggerOptions } from 'pino';

export function loggerOptions(level: string): LoggerOptions {
  return { level, timestamp: stdTimeFunctions.isoTime };
}
