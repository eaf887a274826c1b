/**
 * The Lua scripts of the Redis store. Each runs atomically on the server, which is what makes a check and its
 * update one step across gateway replicas. Times come from the server's clock (TIME), so clock skew between
 * gateway hosts cannot shorten or stretch a lease. Every key a script touches is passed in KEYS and the keys
 * of one script share a {hash tag}, so the scripts also work on Redis Cluster.
 */
import { createHash } from 'node:crypto';
import { GatewayError } from '../errors.js';

export interface LuaScript {
  readonly lua: string;
  readonly sha: string;
}

function script(lua: string): LuaScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * Semaphore acquire attempt. KEYS: holders (zset id -> lease expiry), queue (zset id -> ticket), queue
 * liveness (zset id -> expiry), ticket counter. ARGV: id, limit, leaseMs, queueLeaseMs, keyTtlMs.
 * Drops expired leases and dead waiters, enqueues the caller once (FIFO by ticket), and grants a permit when
 * the caller is among the first `limit - holders` waiters. Returns {1, 0} granted, or {0, rank}.
 */
export const SEM_ACQUIRE = script(`${NOW}
local holders, queue, alive, ticket = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, limit, lease, qlease, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
local dead = redis.call('ZRANGEBYSCORE', alive, '-inf', now)
for i = 1, #dead do redis.call('ZREM', queue, dead[i]) end
if #dead > 0 then redis.call('ZREMRANGEBYSCORE', alive, '-inf', now) end
local granted = 0
local rank = 0
if redis.call('ZSCORE', holders, id) then
  granted = 1
else
  if not redis.call('ZSCORE', queue, id) then
    redis.call('ZADD', queue, redis.call('INCR', ticket), id)
  end
  rank = redis.call('ZRANK', queue, id)
  if rank < limit - redis.call('ZCARD', holders) then
    granted = 1
    redis.call('ZREM', queue, id)
    redis.call('ZREM', alive, id)
  else
    redis.call('ZADD', alive, now + qlease, id)
  end
end
if granted == 1 then redis.call('ZADD', holders, now + lease, id) end
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ttl) end
return {granted, rank}
`);

/**
 * Renews a held permit's lease, or registers one granted locally during an outage (no limit check: the
 * permit is in use either way, and counting it keeps others waiting until it is released).
 * KEYS: holders. ARGV: id, leaseMs, keyTtlMs. Returns 1 if the lease was still valid, 0 if it was (re)added.
 */
export const SEM_HOLD = script(`${NOW}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if score and tonumber(score) > now then return 1 end
return 0
`);

/**
 * Releases a permit or withdraws a waiter (whichever the id is), and wakes the waiters of every replica.
 * KEYS: holders, queue, queue liveness. ARGV: id, channel, message.
 */
export const SEM_RELEASE = script(`
local n = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if n > 0 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return n
`);

/**
 * Replay begin. KEYS: the request's replay hash (h = body hash, s = p(ending)/d(one), t = owner token, b = body).
 * ARGV: body hash, token, pending lease ms. Returns {'compute'}, {'hit', body}, {'conflict'} or {'wait'}.
 */
export const REPLAY_BEGIN = script(`
local e = redis.call('HMGET', KEYS[1], 'h', 's')
if not e[1] then
  redis.call('HSET', KEYS[1], 'h', ARGV[1], 's', 'p', 't', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'compute'}
end
if e[1] ~= ARGV[1] then return {'conflict'} end
if e[2] == 'd' then return {'hit', redis.call('HGET', KEYS[1], 'b')} end
return {'wait'}
`);

/** Extends the owner's pending lease. KEYS: replay hash. ARGV: token, lease ms. Returns 0 if no longer owner. */
export const REPLAY_RENEW = script(`
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`);

/**
 * Ends the owner's computation: 'finish' stores the body for ttl ms, 'abandon' deletes the entry so that a
 * waiter computes. Does nothing when the caller no longer owns the entry (its lease lapsed and another took over). KEYS: replay hash. ARGV: token, mode ('finish' | 'abandon'), body, ttl ms, channel, message.
 */
export const REPLAY_END = script(`
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then return 0 end
if ARGV[2] == 'finish' then
  redis.call('HSET', KEYS[1], 's', 'd', 'b', ARGV[3])
  redis.call('HDEL', KEYS[1], 't')
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
else
  redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
`);

/**
 * Applies one batch of counter increments exactly once: batches of one store instance carry increasing
 * sequence numbers, and one already applied (a retry after an ambiguous timeout) is skipped.
 * KEYS: counters hash, applied-sequence hash (field per store instance). ARGV: origin, seq, seq ttl ms, counters ttl ms
 * (renewed on every batch: idle counters expire), then
 * field, delta pairs.
 */
export const COUNTERS_ADD = script(`
local last = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[2]) <= last then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
for i = 5, #ARGV, 2 do redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`);

/** Sets (ttl ms > 0) or deletes a shared value and announces it. KEYS: value. ARGV: value, ttl ms, channel, msg. */
export const SHARED_SET = script(`
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
`);

/** Reads a shared value with its remaining ttl. KEYS: value. Returns {value or false, pttl}. */
export const SHARED_GET = script(`
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
`);

/**
 * A set-once value. KEYS: the value. ARGV: value, ttl ms. Returns {1, value} when this call stored it, else
 * {0, the stored value}.
 */
export const CLAIM = script(`
local v = redis.call('GET', KEYS[1])
if v then return {0, v} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, ARGV[1]}
`);

/**
 * Adds a member to a bounded set and renews its ttl. KEYS: the set. ARGV: member, ttl ms, max members. Returns 1
 * when the member is in the set afterwards, 0 when the set was full without it (the caller counts it left out).
 */
export const SET_ADD = script(`
local kept = 1
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 then
  if redis.call('SCARD', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('SADD', KEYS[1], ARGV[1])
  else
    kept = 0
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return kept
`);

/**
 * A token bucket (a client's max_candidates_per_minute, shared by every gateway replica). KEYS: the bucket
 * (hash: tokens, at). ARGV: capacity, n. Refills at capacity per minute up to capacity (a new bucket is full),
 * then takes n when the bucket holds min(n, capacity): a take larger than the bucket waits for a full one and
 * leaves it in debt, which later takes repay. The key expires once the bucket would be full again (a missing
 * bucket is a full one). Returns {1, 0} taken, or {0, ms until enough}.
 */
export const TOKEN_TAKE = script(`${NOW}
local cap, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(v[1]) or cap
local at = tonumber(v[2]) or now
if now > at then tokens = math.min(cap, tokens + (now - at) * cap / 60000) end
local need = math.min(n, cap)
local ok = 0
if tokens + 0.000001 >= need then
  tokens = tokens - n
  ok = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((cap - tokens) * 60000 / cap)) + 1000)
if ok == 1 then return {1, 0} end
return {0, math.max(1, math.ceil((need - tokens) * 60000 / cap))}
`);

/**
 * A script's array reply, for its caller to read element by element (numberAt, bufferAt): the scripts above
 * answer arrays, so anything else is a script and a caller out of step, reported as a failed Redis call.
 */
export function arrayReply(reply: unknown): readonly unknown[] {
  if (!Array.isArray(reply)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `a gateway Lua script answered ${typeof reply}, not an array`);
  return reply;
}

export function numberAt(reply: readonly unknown[], i: number): number {
  const v = reply[i];
  if (typeof v !== 'number') throw new GatewayError('GATEWAY_ERR_INTERNAL', `a gateway Lua script answered ${typeof v} at ${i}, not a number`);
  return v;
}

/** Element i of a reply read with callBuffer (scriptBuffer): a Buffer, or undefined past its end. */
export function bufferAt(reply: readonly unknown[], i: number): Buffer | undefined {
  const v = reply[i];
  if (v !== undefined && !Buffer.isBuffer(v)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `a gateway Lua script answered ${typeof v} at ${i}, not bytes`);
  return v;
}
