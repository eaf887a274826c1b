/**
 * An ensemble member's own figures (docs/experiments.md#what-each-number-means). Every input of an ensemble asks
 * each member, and its trajectory is counted once, on the member of its first leg: a share per trajectory would
 * credit one member with another's error candidates. A member's error-candidate share is therefore the share of
 * the candidates it produced itself that were errors; its latency and candidates are already its own (counted by
 * the member that produced them).
 */
import type { ArmReport } from '../arm-counts.js';

export function memberFigures(a: ArmReport): ArmReport {
  const { completed, error } = a.candidates;
  const all = completed + error;
  return { ...a, error_candidate_share: all > 0 ? error / all : null, error_candidate_share_of: 'candidates' };
}
