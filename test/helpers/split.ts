/** The split's draw for one input of one request, as the planner makes it (src/routing/plan.ts). */
import type { Member } from '../../src/routing/routes.js';
import { chooseArmAt, splitPoint } from '../../src/routing/split.js';

export function chooseArm(requestId: string, inputId: unknown, arms: readonly Member[], canServe?: (b: string) => boolean): string {
  return chooseArmAt(splitPoint(requestId, inputId), arms, canServe);
}
