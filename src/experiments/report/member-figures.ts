/**
 * An ensemble member's own figures (docs/experiments.md#what-each-number-means): a trajectory is counted on the
 * member of its first leg, so a share per trajectory would credit one member with another's error candidates.
 */
import type { ArmReport } from '../arm-counts.js';

export function memberFigures(a: ArmReport): ArmReport {
  const { completed, error } = a.candidates;
  const all = completed + error;
  return { ...a, error_candidate_share: all > 0 ? error / all : null, error_candidate_share_of: 'candidates' };
}
