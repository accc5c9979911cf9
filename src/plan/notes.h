// The plan's notes: the assumptions behind a result worth telling the user (the frameworks searched
// and why, offers planned on one node for want of a network figure, the conservative network of an
// assumed one, GPUs skipped for precision, what LoRA/QLoRA layouts run on, the spot risk's
// sources, the storage priced and the storage no sourced price covers, what checkpoint writes are
// costed at, the default batch). Read from the stages' outputs; pure and thread-safe.
#pragma once

#include <string>
#include <vector>

#include "plan/candidate.h"
#include "plan/classes.h"
#include "plan/costing.h"

namespace fulcrum::plan {

// The notes for `candidates` (costed and ranked) planned from `classes`, in a fixed order.
std::vector<std::string> PlanNotes(const PlanInputs& in, const HardwareClasses& classes,
                                   const CostedCandidates& costed,
                                   const std::vector<Candidate>& candidates);

}  // namespace fulcrum::plan
