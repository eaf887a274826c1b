/** Fields of the untyped objects fastify hands over where a route declares no schema: checked, never cast. */

export function fieldOf(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
  return Object.getOwnPropertyDescriptor(value, key)?.value;
}

export function stringField(value: unknown, key: string): string | undefined {
  const v = fieldOf(value, key);
  return typeof v === 'string' ? v : undefined;
}
