// How a digest budget draws objects: a fair subsample, whatever order the objects come in.
//
// A budget (bytes a second at death, bytes a sweep) decides object by object, in the order the program frees
// them or the map holds them, and that order can follow the contents (a burst of frame buffers freed in frame
// order). A draw that stopped at a cap took only the first objects: a subsample of one content, reported as the
// site's. Here every object keeps a chance, and is weighed by the inverse of the probability it was drawn with.
// Each probability depends only on the draws before it, so the weighted counts stay unbiased in any order
// (E[1{drawn}/p | the draws before] = 1), and the estimators' intervals, which use the weights' effective sample
// size, widen by what the unequal weights cost.
#pragma once

namespace ojx {

// The probability of drawing the next object: `base`, chosen before the window or sweep began (the budget over the
// bytes offered), while the bytes digested so far are within `budget`; past it, `base` times the square of
// budget/digested, so that a burst of B bytes costs about budget × (3B/budget)^(1/3) (a burst of a hundred
// budgets: about seven), and no object's probability is 0. `budget` 0: no budget.
inline double budgeted_inclusion(double base, double digested, double budget) noexcept {
    if (budget <= 0 || digested <= budget) return base;
    const double ratio = budget / digested;
    return base * ratio * ratio;
}

} // namespace ojx
