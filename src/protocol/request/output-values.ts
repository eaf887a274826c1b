/** A candidate's values checked as strictly as agentOutputSchema; depths: 3, tool_calls 4, a tool call 5. */
import type { MemoryLayout } from '../memory-tag.js';
import { ProtocolWalker } from './protocol-walker.js';
import { QUOTE, LBRACKET, LBRACE } from '../json/json-bytes.js';

export abstract class OutputValueWalker extends ProtocolWalker {
  /** The string at `v` when the value there is one, else undefined; `endAt` receives where the value ends. */
  protected stringAt(v: number, depth: number): string | undefined {
    const s = this.s;
    const e = s.value(v, depth);
    this.endAt.at = e;
    return s.at(v) === QUOTE ? s.text(v, e, s.escaped) : undefined;
  }

  protected nonEmptyAt(v: number, depth: number): string | undefined {
    const t = this.stringAt(v, depth);
    return t !== undefined && t.length > 0 ? t : undefined;
  }

  protected readonly endAt = { at: 0 };

  /** A strict AgentDecision object at `p`: {say?: string, tool_calls?: [ToolCall]}. */
  protected decision(p: number): { end: number; ok: boolean } {
    const s = this.s;
    let ok = true;
    const end = this.members(p, 3, (name, v) => {
      if (name === 'say') {
        if (this.stringAt(v, 3) === undefined) ok = false;
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
    return this.twoStrings(p, 5, ['name', 'target_robot_name'], 'arguments', (c) => c === LBRACE);
  }

  /** A strict AgentError at `p`: code and message non-empty strings, component a string or null. */
  protected agentError(p: number): { end: number; ok: boolean } {
    return this.twoStrings(p, 3, ['code', 'message'], 'component', (c) => c === QUOTE || c === 0x6e);
  }

  /** An object of the two non-empty strings `required` and an optional `other` whose first byte `otherOk` takes. */
  private twoStrings(
    p: number,
    depth: number,
    required: readonly [string, string],
    other: string,
    otherOk: (c: number) => boolean,
  ): { end: number; ok: boolean } {
    const s = this.s;
    let ok = true;
    let first: string | undefined;
    let second: string | undefined;
    const end = this.members(p, depth, (field, v) => {
      if (field === required[0] || field === required[1]) {
        const t = this.nonEmptyAt(v, depth);
        if (field === required[0]) first = t;
        else second = t;
        return this.endAt.at;
      }
      if (field !== other || !otherOk(s.at(v))) ok = false;
      return s.value(v, depth);
    });
    return { end, ok: ok && first !== undefined && second !== undefined };
  }

  /** A memory object at `p`: its edges and the members named memory_key. */
  protected memory(p: number): MemoryLayout & { end: number } {
    return this.memoryLayout(p, 3, (v) => this.s.value(v, 3));
  }
}
