/**
 * Fields of the untyped objects fastify hands over where a route declares no schema (a plugin's params, a query
 * string, a parsed JSON body): read with a check, never a cast, since each comes from the client.
 */

/** `value[key]` when `value` is a non-array object that has it, else undefined. */
export function fieldOf(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
  return Object.getOwnPropertyDescriptor(value, key)?.value;
}

/** `value[key]` when it is a string, else undefined. */
export function stringField(value: unknown, key: string): string | undefined {
  const v = fieldOf(value, key);
  return typeof v === 'string' ? v : undefined;
}
