/** Apart from schemas.ts so that it and types.ts import these without a cycle. */
export type JsonObject = { [key: string]: unknown };

/** A number marker (exact-json.ts) for an integer JS cannot hold exactly. */
export type IntValue = number | string;
