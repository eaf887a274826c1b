/**
 * Lua scripts: each makes a check and its update one step across replicas. Times come from the server's clock, so
 * skew between gateway hosts cannot stretch a lease; one script's KEYS share a {hash tag}, for Redis Cluster.
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
 * KEYS: holders (zset id -> lease expiry), queue (zset id -> ticket), queue liveness (zset id -> expiry), ticket
 * counter. ARGV: id, limit, leaseMs, queueLeaseMs, keyTtlMs. Grants when the caller is among the first
 * `limit - holders` waiters: {1, 0}, else {0, rank}.
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
 * Renews a permit's lease, or registers one granted locally during an outage (no limit check: it is in use
 * either way). KEYS: holders. ARGV: id, leaseMs, keyTtlMs. 1: the lease was still valid; 0: (re)added.
 */
export const SEM_HOLD = script(`${NOW}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if score and tonumber(score) > now then return 1 end
return 0
`);

/** Releases a permit or withdraws a waiter. KEYS: holders, queue, queue liveness. ARGV: id, channel, message. */
export const SEM_RELEASE = script(`
local n = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if n > 0 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return n
`);

/**
 * KEYS: the replay hash (h = body hash, s = p(ending)/d(one), t = owner token, b = body). ARGV: body hash, token,
 * lease ms. Returns {'compute'}, {'hit', body}, {'conflict'} or {'wait'}.
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

/** KEYS: replay hash. ARGV: token, lease ms. Returns 0 if no longer the owner. */
export const REPLAY_RENEW = script(`
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`);

/** Only while the caller still owns the entry. KEYS: replay hash. ARGV: token, mode, body, ttl ms, channel, message. */
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
 * Applies a batch of increments once: a store instance's batches carry increasing sequence numbers. KEYS:
 * counters hash, applied-sequence hash. ARGV: origin, seq, seq ttl ms, counters ttl ms, then field, delta pairs.
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

/** Sets (ttl ms > 0) or deletes, and announces. KEYS: value. ARGV: value, ttl ms, channel, msg. */
export const SHARED_SET = script(`
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
`);

/** KEYS: value. Returns {value or false, pttl}. */
export const SHARED_GET = script(`
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
`);

/** KEYS: the value. ARGV: value, ttl ms. Returns {1, value} when this call stored it, else {0, stored value}. */
export const CLAIM = script(`
local v = redis.call('GET', KEYS[1])
if v then return {0, v} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, ARGV[1]}
`);

/** KEYS: the claim. ARGV: the value it must still hold to be deleted. */
export const CLAIM_RELEASE = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
`);

/** KEYS: the set. ARGV: member, ttl ms, max members. Returns 0 when the set was full without the member. */
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
 * KEYS: the bucket (hash: tokens, at). ARGV: capacity, n. Takes n when the bucket holds min(n, capacity), so a
 * take larger than the bucket leaves it in debt. The key expires once the bucket would be full again (a missing
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

/** Anything but an array is a script and a caller out of step, reported as a failed Redis call. */
export function arrayReply(reply: unknown): readonly unknown[] {
  if (!Array.isArray(reply)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `a gateway Lua script answered ${typeof reply}, not an array`);
  return reply;
}

export function numberAt(reply: readonly unknown[], i: number): number {
  const v = reply[i];
  if (typeof v !== 'number') throw new GatewayError('GATEWAY_ERR_INTERNAL', `a gateway Lua script answered ${typeof v} at ${i}, not a number`);
  return v;
}

export function bufferAt(reply: readonly unknown[], i: number): Buffer | undefined {
  const v = reply[i];
  if (v !== undefined && !Buffer.isBuffer(v)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `a gateway Lua script answered ${typeof v} at ${i}, not bytes`);
  return v;
}
