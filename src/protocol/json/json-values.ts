/**
 * The two value types the protocol schemas are built from, apart from the schemas so that schemas.ts and the
 * types inferred from it (types.ts) import them without a cycle.
 */

/** A free-form JSON object (tools, attributes, memory, extra_keys, internal_steps), kept by reference. */
export type JsonObject = { [key: string]: unknown };

/**
 * A strict integer: a JS number, or a number marker string (exact-json.ts) for an integer JS cannot hold
 * exactly. Every integer field of the protocol has this type, so a use site handles both once, not by a cast.
 */
export type IntValue = number | string;
