"""Many configs of one job trained as one stacked model (docs/design.md §15).

On a GPU a tabular network is bound by kernel launches, not arithmetic: a batch of 256 rows
through a 3 × 256 MLP is a few microseconds of work behind tens of launches. The configs of one
(dataset, split) job that share their tensor shapes (the MLP's whole random search; RealMLP's
configs with equal hidden sizes and embedding type) are therefore trained as *members* of one
stacked model: every weight is a ``[members, ...]`` tensor, a layer is one batched matmul, the
loss is the sum of the members' own mean losses, and one vectorised Adam step updates them all
with per-member learning rate, weight decay and schedules. That is k trainings for about the
launches of one.

It must stay the same algorithm as training each config alone. What guarantees it:

* every member starts from the weights its config's own trainer would build (same seed, same
  code), and keeps its own shuffling generator and its own dropout stream;
* nothing couples members: no cross-member reduction except the sum of losses (whose gradient
  is 1 for each member), no global gradient clipping, no TF32, per-member optimizer scalars;
* so a member's records depend on its config and seed only, not on which members share its
  group or at what position (tested bit for bit on the CPU), and equal the single-config
  trainer's within float32 rounding when dropout is off (batched vs plain matmul).

Modules: :mod:`~tabbench.models.stacked.adam` (the optimizer), :mod:`~.layers` (linear layers
and dropout streams over members), :mod:`~.loop` (the training loop shared by the MLP and
RealMLP, with CUDA-graph capture of the step), :mod:`~.plan` (which configs train together).

Part of ``models`` (layer 3 of docs/design.md §2): it imports what ``models`` may.
"""
