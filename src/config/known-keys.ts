/** The keys the schema allows at a path, for "did you mean ...?", read from zod's public `_zod.def` objects. */
import { z } from 'zod';
import { configSchema } from './schema.js';
import type { PathSegment } from './route-problems.js';

interface Def {
  type: string;
  innerType?: z.core.$ZodType;
  in?: z.core.$ZodType;
  valueType?: z.core.$ZodType;
  element?: z.core.$ZodType;
  options?: readonly z.core.$ZodType[];
  shape?: object;
}

function schemaAt(def: object, key: string): z.core.$ZodType | undefined {
  const v: unknown = Reflect.get(def, key);
  return v instanceof z.core.$ZodType ? v : undefined;
}

/** Each field checked to be what it is read as: its type differs per kind. */
function defOf(s: z.core.$ZodType): Def {
  const def = s._zod.def;
  const options: unknown = Reflect.get(def, 'options');
  const shape: unknown = Reflect.get(def, 'shape');
  return {
    type: def.type,
    innerType: schemaAt(def, 'innerType'),
    in: schemaAt(def, 'in'),
    valueType: schemaAt(def, 'valueType'),
    element: schemaAt(def, 'element'),
    options: Array.isArray(options) ? options.filter((o: unknown): o is z.core.$ZodType => o instanceof z.core.$ZodType) : undefined,
    shape: shape !== null && typeof shape === 'object' ? shape : undefined,
  };
}

function unwrap(s: z.core.$ZodType, depth = 0): z.core.$ZodType[] {
  if (depth > 20) return [];
  const d = defOf(s);
  const inner = d.innerType ?? (d.type === 'pipe' ? d.in : undefined);
  if (inner !== undefined) return unwrap(inner, depth + 1);
  if (d.type === 'union' && d.options !== undefined) return d.options.flatMap((o) => unwrap(o, depth + 1));
  return [s];
}

function step(s: z.core.$ZodType, seg: PathSegment): z.core.$ZodType[] {
  const d = defOf(s);
  if (d.type === 'object' && typeof seg === 'string' && d.shape !== undefined) {
    const field = schemaAt(d.shape, seg);
    if (field !== undefined) return [field];
  }
  if (d.type === 'record' && d.valueType !== undefined) return [d.valueType];
  if (d.type === 'array' && d.element !== undefined && typeof seg === 'number') return [d.element];
  return [];
}

export function knownKeysAt(path: readonly PathSegment[]): string[] {
  let level = unwrap(configSchema);
  for (const seg of path) level = level.flatMap((s) => step(s, seg)).flatMap((s) => unwrap(s));
  const keys = new Set<string>();
  for (const s of level) {
    const d = defOf(s);
    if (d.type === 'object' && d.shape !== undefined) for (const k of Object.keys(d.shape)) keys.add(k);
  }
  return [...keys];
}
