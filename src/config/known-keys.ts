/** The keys the schema allows at a path, for "did you mean ...?", read from the one zod schema. */
import { z } from 'zod';
import { configSchema } from './schema.js';
import type { PathSegment } from './route-problems.js';

type Schema = z.core.$ZodType;

/** The schemas a value at this level may be checked against (several for a union). */
function unwrap(s: Schema): Schema[] {
  if (s instanceof z.ZodOptional || s instanceof z.ZodNullable) return unwrap(s.unwrap());
  if (s instanceof z.ZodDefault || s instanceof z.ZodPrefault) return unwrap(s.unwrap());
  if (s instanceof z.ZodPipe) return unwrap(s.in);
  if (s instanceof z.ZodUnion) return s.options.flatMap(unwrap);
  return [s];
}

function step(s: Schema, seg: PathSegment): Schema[] {
  // Own keys only: a segment such as "constructor" names no field.
  if (s instanceof z.ZodObject && typeof seg === 'string' && Object.hasOwn(s.shape, seg)) return [s.shape[seg]];
  if (s instanceof z.ZodRecord) return [s.valueType];
  if (s instanceof z.ZodArray && typeof seg === 'number') return [s.element];
  return [];
}

export function knownKeysAt(path: readonly PathSegment[]): string[] {
  let level = unwrap(configSchema);
  for (const seg of path) level = level.flatMap((s) => step(s, seg)).flatMap(unwrap);
  const keys = new Set<string>();
  for (const s of level) if (s instanceof z.ZodObject) for (const k of Object.keys(s.shape)) keys.add(k);
  return [...keys];
}
