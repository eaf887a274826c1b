/** The experiment report's statistics: pure functions on counts and sums, no I/O, no clock. */
export * from './normal.js';
export * from './ratio.js';
export * from './compare.js';
export * from './proportions.js';
export * from './srm.js';
export * from './stratified.js';
export * from './student-t.js';
export * from './range.js';
