/**
 * The values inside a backend's candidate that the answer indexer (answer-index.ts) checks as strictly as
 * agentOutputSchema (schemas.ts) without decoding them: an AgentDecision with its tool calls, an AgentError, and
 * the top level of `memory`, whose members named memory_key are located so that the gateway's tag can be
 * written in their place (memory-tag.ts). Levels as in answer-index.ts: a candidate's values are at 3, an
 * output's tool_calls at 4, a tool call at 5.
 */
import type { MemoryLayout } from '../memory-tag.js';
import { ProtocolWalker } from './protocol-walker.js';
import { QUOTE, LBRACKET, LBRACE } from '../json/json-bytes.js';

export abstract class OutputValueWalker extends ProtocolWalker {
  /** The string at `v` when the value there is one, else undefined; `end` receives where the value ends. */
  protected stringAt(v: number, depth: number, end: { at: number }): string | undefined {
    const s = this.s;
    const e = s.value(v, depth);
    end.at = e;
    return s.at(v) === QUOTE ? s.text(v, e, s.escaped) : undefined;
  }

  protected readonly endAt = { at: 0 };

  /** A strict AgentDecision object at `p`: {say?: string, tool_calls?: [ToolCall]}. */
  protected decision(p: number): { end: number; ok: boolean } {
    const s = this.s;
    let ok = true;
    const end = this.members(p, 3, (name, v) => {
      if (name === 'say') {
        const t = this.stringAt(v, 3, this.endAt);
        if (t === undefined) ok = false;
        return this.endAt.at;
      }
      if (name === 'tool_calls') {
        if (s.at(v) !== LBRACKET) {
          ok = false;
          return s.value(v, 3);
        }
        return this.elements(v, 4, (q) => {
          if (s.at(q) !== LBRACE) {
            ok = false;
            return s.value(q, 4);
          }
          const r = this.toolCall(q);
          if (!r.ok) ok = false;
          return r.end;
        });
      }
      ok = false;
      return s.value(v, 3);
    });
    return { end, ok };
  }

  /** A strict ToolCall at `p`: name and target_robot_name non-empty strings, arguments an object. */
  private toolCall(p: number): { end: number; ok: boolean } {
    const s = this.s;
    let ok = true;
    let name: string | undefined;
    let target: string | undefined;
    const end = this.members(p, 5, (field, v) => {
      if (field === 'name' || field === 'target_robot_name') {
        const t = this.stringAt(v, 5, this.endAt);
        const good = t !== undefined && t.length > 0 ? t : undefined;
        if (field === 'name') name = good;
        else target = good;
        return this.endAt.at;
      }
      if (field === 'arguments') {
        if (s.at(v) !== LBRACE) ok = false;
        return s.value(v, 5);
      }
      ok = false;
      return s.value(v, 5);
    });
    return { end, ok: ok && name !== undefined && target !== undefined };
  }

  /** A strict AgentError at `p`: code and message non-empty strings, component a string or null. */
  protected agentError(p: number): { end: number; ok: boolean } {
    const s = this.s;
    let ok = true;
    let code: string | undefined;
    let message: string | undefined;
    const end = this.members(p, 3, (field, v) => {
      if (field === 'code' || field === 'message') {
        const t = this.stringAt(v, 3, this.endAt);
        const good = t !== undefined && t.length > 0 ? t : undefined;
        if (field === 'code') code = good;
        else message = good;
        return this.endAt.at;
      }
      if (field === 'component') {
        const c = s.at(v);
        if (c !== QUOTE && c !== 0x6e) ok = false;
        return s.value(v, 3);
      }
      ok = false;
      return s.value(v, 3);
    });
    return { end, ok: ok && code !== undefined && message !== undefined };
  }

  /** A memory object at `p`: its edges and the members named memory_key. */
  protected memory(p: number): MemoryLayout & { end: number } {
    return this.memoryLayout(p, 3, (v) => this.s.value(v, 3));
  }
}
