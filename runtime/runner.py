"""PipelineRunner: one training step of a plan on this rank, inside an ordinary training loop.

The runner lowers the plan once (``lowering.lower``: computes plus the sends and receives the
dependency rules imply), checks that modules, loss and process group fit the plan before any
communication, and on each ``step`` replays the program through a dispatch table: compute ops go to
``handlers.HANDLERS`` by action kind, communication ops to the mailbox.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

import torch
import torch.distributed as dist
from torch import nn

from schedc.actions import Action
from schedc.errors import SchedcError
from schedc.plan import Plan

from .arguments import check_arguments, check_call, check_fit, check_flags, device_of, group_of
from .batches import batch_sizes, cut_batch, refused_alike
from .comm import Mailbox, call_tag
from .dp_buckets import DEFAULT_BUCKET_BYTES, check_dp_arguments, check_dp_group, ready_order
from .dp_grads import DataParallelGrads
from .errors import PlanMismatchError, StepAbortedError
from .evaluate import fill_losses, forward_only, forward_orders, merged
from .first_call import first_call_check, tell_failed
from .grads_ready import GradsReady
from .handlers import HANDLERS, StepContext
from .held_bytes import HeldBytes, recording
from .links import make_links
from .loss_scaling import check_scaler, loss_scale, scaling
from .lowering import Compute, Delivery, Op, PostRecv, Send, TensorKey, delivery, in_send_order, lower
from .rank_label import names_global_rank, noted
from .records import Held, Span
from .shape_book import ShapeBook
from .shapes import Metas, changed_message, grad_metas, metas_of
from .shared_weights import SplitChecks
from .tied import Tie, TiedParameters

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_RECV_AHEAD = 4
"""Receives are posted this many computes before their consumer: enough to hide a transfer
behind compute, few enough that received activations do not pile up ahead of the plan."""


class PipelineRunner:
    """Runs a plan's step on this rank's stages: ``loss = runner.step(x, target=y)``.

    ``stages`` maps each stage index this rank holds (in the plan's placement) to its module, which
    takes and returns one tensor or a tuple of them (``shapes.py``);
    ``loss_fn(output, target)`` (mean-reduced) is needed on the rank holding the last stage for
    ``step`` (a runner without one runs ``eval`` only).
    ``timeout`` bounds every wait for another rank, in seconds (None: the process group's own).
    ``recv_ahead``: how many computes before its consumer a receive is posted (None: all at the
    start of the step). With ``record=True`` each step leaves ``timeline``: a ``Span`` per action,
    seconds from the step's start on this rank, the measured counterpart of the simulator's slots
    (CPU clock: on CUDA the times are launch times unless the device is synchronised). With
    ``record_memory=True`` each step leaves ``memory``: a ``Held`` per action, the bytes this rank
    holds after it, the measured counterpart of the simulator's memory curve (``held_bytes.py``; it
    adds a weak reference per saved tensor). ``grads_ready(params)`` is called with the parameters
    whose gradients for the step are final, as soon as they are, each leaf that got a gradient once
    per step, a loss's or another stage's weight included (``grads_ready.py``): start their
    data-parallel all-reduce there (``async_op=True``) and wait for it before the optimizer step,
    so it overlaps the rest of the pipeline. Or give ``dp_group``, the ranks holding
    the same stages as this one in the other pipelines: the step then averages every gradient over
    it, in buckets of about ``bucket_bytes`` launched as they become final (``dp_grads.py``), and
    returns once the averages are in ``.grad`` (building the runner is then collective over
    ``dp_group``: the first replica's weights are broadcast, as DDP does). ``ties`` lists weights
    shared between stages (``tied.py``), e.g. ``[[(0, "embed.weight"), (7, "head.weight")]]``: the
    copies are made equal here and their gradients summed after each step. ``variable_shapes=True``
    lets the batch's shape change from call to call (sequence lengths): each call agrees on it in
    one all-reduce, and a new shape's boundaries are learned then (``shape_book.py``).

    Every rank must run the same plan (make it on one rank and broadcast it: solves with several
    workers differ run to run); the first step (or eval) compares the plan's digest across the
    group in one all-reduce, so ranks with different plans fail there, naming it, instead of
    waiting for messages that never come.

    ``device``: where boundary tensors live (default: the stages' parameters' device, else CPU).
    On CUDA (NCCL) the runner makes it the current device and sends every message over its link's
    own process group, receives posted in the sender's order (``links.py``); ``link_groups=True``
    does the same on CPU. Constructing a runner is then collective over the world, as torch's
    ``new_group`` is: every rank of the world (every pipeline's, with data parallelism) constructs
    its runner, and with the same ``link_groups``; ``close()`` destroys the groups of a runner replaced.
    """

    @names_global_rank
    def __init__(
        self, plan: Plan, stages: Mapping[int, nn.Module], loss_fn: Callable | None = None,
        group: dist.ProcessGroup | None = None, *, timeout: float = DEFAULT_TIMEOUT_S,
        recv_ahead: int | None = DEFAULT_RECV_AHEAD, record: bool = False, ties: Sequence[Tie] = (),
        device: torch.device | None = None, link_groups: bool = False, record_memory: bool = False,
        grads_ready: Callable[[list[torch.Tensor]], None] | None = None,
        dp_group: dist.ProcessGroup | None = None, bucket_bytes: int = DEFAULT_BUCKET_BYTES,
        variable_shapes: bool = False,
    ) -> None:
        check_arguments(plan, timeout, recv_ahead, ties, loss_fn)
        check_flags(record=record, link_groups=link_groups, record_memory=record_memory,
                    variable_shapes=variable_shapes)
        check_dp_arguments(dp_group, bucket_bytes, grads_ready)
        self.timeout = None if timeout is None else float(timeout)
        self.plan, self.loss_fn, self.record = plan, loss_fn, bool(record)  # numpy's bool passes too
        self.group, self.rank, world = group_of(group, plan.problem.p)
        check_dp_group(dp_group, self.group, self.rank)
        check_fit(plan.problem, stages, ties, self.rank, world)
        self.stages, self._cut = dict(stages), getattr(stages, "cut", None)
        self.params = self._trainable()
        self.device = device_of(self.stages, device, self.rank)
        self.timeline: list[Span] = []
        self.record_memory, self.memory = bool(record_memory), []
        self._held: HeldBytes | None = None
        self.grads_ready, self._ready = grads_ready, None
        self._wire(stages, ties, dp_group, bucket_bytes, link_groups, recv_ahead, variable_shapes)
        self._fresh_calls()
        self.tied = TiedParameters(plan.problem, ties, self.stages, self.rank, self.group, self.timeout)
        self.tied.sync_weights()

    def _wire(self, stages: Mapping[int, nn.Module], ties: Sequence[Tie], dp_group: dist.ProcessGroup | None,
              bucket_bytes: int, link_groups: bool, recv_ahead: int | None, variable_shapes: bool) -> None:
        """The program this rank runs, and the links, shapes and gradient averaging it runs through."""
        problem, loss_fn = self.plan.problem, self.loss_fn
        self._split = SplitChecks(stages, ties, self.rank, self.group, self.device, self.timeout)
        self._dp = (DataParallelGrads(dp_group, bucket_bytes, self.rank, self.device, self.timeout,
                                      {**self.stages, "loss": loss_fn}) if dp_group is not None else None)
        self.links = make_links(problem, self.group, self.rank, self.timeout, self.device, link_groups)
        self._lowering, self._recv_ahead = (in_send_order if self.links is not None else lower), recv_ahead
        self.program: tuple[Op, ...] = self._lowering(problem, self.plan.orders, self.rank, recv_ahead)
        self._eval: tuple[tuple[Op, ...], Delivery | None] | None = None
        """The forward-only program and its deliveries, made at the first ``eval``."""
        self._delivery = (delivery(problem, self.plan.orders, self.rank) if self.device.type == "cpu"
                          else None)
        self._shapes = ShapeBook(problem, self.stages, self.rank, self.group, self.timeout, self.device,
                                 variable_shapes)
        self._ops = {Compute: self._compute, PostRecv: self._post_recv, Send: self._send}
        self._lossless: int | None = self.rank if loss_fn is None and self.holds_last else None
        """The rank holding the last stage if its runner has no loss_fn (all ranks learn it in the
        first step's or eval's plan check), so that every rank refuses ``step`` alike."""

    def _fresh_calls(self) -> None:
        """The state that calls carry from one to the next, as before the first."""
        self._everywhere = (False, False)
        """Whether every rank's first call was given the input, and the target (``_prepare``)."""
        self._aborted: str | None = None
        """How an earlier step failed part-way, if one did (``StepAbortedError``)."""
        self._closed = False
        self._call, self._steps, self._calls = "step", 0, 0
        """What the current call runs, step or eval (set by ``_prepare``, checked by ``_plan_check``),
        and how many steps began, failed ones too: data-parallel replicas compare it, since a replica
        whose step failed before its averaging would pair its next one with the others' current one;
        and how many calls reached their messages (``comm.call_tag``)."""
        self._batch: tuple[int | None, int | None] = (None, None)
        """The current call's input and target sizes, where this rank was given them (checked likewise)."""
        self._copy_inputs = [False]
        """Whether stage 0's microbatches are copies (``handlers.forward``), kept across steps."""

    def close(self) -> None:
        """Releases the link groups (``links.close``): on every rank, after its last call."""
        self._closed = True
        if self.links is not None:
            self.links.close(self._aborted is None)

    @property
    def aborted(self) -> str | None:
        """How an earlier step failed part-way on this rank, if one did: no collective may follow."""
        return self._aborted

    @property
    def boundaries(self) -> dict[int, Metas] | None:
        """The metas of each neighbouring stage's output, as this call's messages carry them."""
        return self._shapes.boundaries

    @property
    def holds_first(self) -> bool:
        return 0 in self.stages

    @property
    def holds_last(self) -> bool:
        return self.plan.problem.num_stages - 1 in self.stages

    @names_global_rank
    def step(self, x: torch.Tensor | None = None, target: object = None,
             losses: list | None = None, scaler: object = None) -> torch.Tensor | None:
        """One training step over the plan's m microbatches of the batch ``x``.

        Gradients are accumulated into ``.grad`` equal to those of the full-batch mean loss; the
        mean loss is returned on the rank holding the last stage, None elsewhere, and there each
        ``losses`` holds each microbatch's loss (in microbatch order), as torch's ``step`` leaves it.
        A float16 ``scaler`` scales the gradients by its scale, as ``scaler.scale(loss).backward()``
        does (``loss_scaling.py``); the losses returned stay unscaled.
        """
        call = "scaled step" if scaling(scaler) else "step"
        inputs, targets = self._prepare(x, target, losses, self.loss_fn is not None, call, scaler)
        if self._lossless is not None:  # known on every rank since the first step or eval
            whose = "this runner" if self._lossless == self.rank else f"rank {self._lossless}'s runner"
            raise PlanMismatchError(f"rank {self.rank}: step() needs a loss_fn on the rank holding the last "
                                    f"stage; {whose} was built without one (it runs eval() only)")
        self.params = self._trainable()  # a parameter unfrozen (or added) since the last step trains too
        outside = self._split.before_step()  # may refuse the step: before its state is built
        self.timeline, self._t0 = [], time.perf_counter()
        self._ctx = self._context(inputs, targets, self._delivery)
        before = self.tied.snapshot()
        with self._running():
            self._track_grads()
            with self._memory_recording(inputs, targets):
                for op in self.program:
                    self._ops[type(op)](op)
            self._ctx.mailbox.finish()
            if self._ctx.saved:
                raise RuntimeError(f"rank {self.rank}: step ended with unfinished microbatches "
                                   f"{sorted(self._ctx.saved)}")
            self.tied.reduce_grads(before)
            if self._ready is not None:
                self._hand_over(self._ready.rest())
            if self._dp is not None:
                self._dp.finish()
            self._split.check_grads(outside)  # after the step's collectives: no peer waits for this rank
            fill_losses(losses, self._ctx.losses)
            return torch.stack(list(self._ctx.losses.values())).mean() if self.holds_last else None

    @names_global_rank
    def eval(self, x: object = None, target: object = None, losses: list | None = None) -> object:
        """The plan's forwards only, under ``torch.no_grad`` (validation, inference), as torch's
        ``schedule.eval``: returns the last stage's output for the whole batch on the rank holding
        it (None elsewhere) and, given ``target`` there, puts each microbatch's loss in ``losses``
        (``evaluate.fill_losses``). Modules stay in the mode the caller set (``module.eval()``)."""
        inputs, targets = self._prepare(x, target, losses, False, "eval")
        if self._eval is None:
            problem, orders = self.plan.problem, forward_orders(self.plan.orders)
            self._eval = (self._lowering(problem, orders, self.rank, self._recv_ahead),
                          delivery(problem, orders, self.rank) if self.device.type == "cpu" else None)
        outputs: dict[int, object] = {}
        found: dict[int, torch.Tensor] = {}
        self._ctx = self._context(inputs, targets, self._eval[1])
        ops = {Compute: lambda op: noted(self.rank, op.action, forward_only, self._ctx, op.action, outputs,
                                         found), PostRecv: self._post_recv, Send: self._send}
        with self._running(), torch.no_grad():
            for op in self._eval[0]:
                ops[type(op)](op)
            self._ctx.mailbox.finish()
        fill_losses(losses, found)
        return merged(outputs) if self.holds_last else None

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        """A step or eval under way: a failure part-way marks the runner aborted (messages may be
        in flight), and the step's state and hooks go either way."""
        try:
            yield
        except BaseException as err:
            self._aborted = f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:200]}"
            raise
        finally:
            self._ctx = None
            if self._dp is not None:
                self._dp.close()

    def _prepare(self, x: object, target: object, losses: object, target_needed: bool, call: str,
                 scaler: object = None) -> tuple[list | None, list | None]:
        """(inputs, targets) cut into microbatches where this rank needs them, once this rank's checks
        of its arguments have passed. ``call`` (step or eval) goes into the first call's plan check."""
        self._call, self._batch, self._steps = call, batch_sizes(x, target), self._steps + (call != "eval")
        if self._closed:
            raise StepAbortedError(f"rank {self.rank}: this runner was closed (close()): build a new one")
        if self._aborted is not None:
            raise StepAbortedError(f"rank {self.rank}: an earlier step failed here ({self._aborted}); its "
                                   "messages may still be in flight: build a new runner (and process "
                                   "group) on every rank before the next step")
        rank = self.rank
        try:  # a failure here tells the peers in the call's first collective (first call, variable_shapes)
            check_call(losses, call, rank, self.holds_last, self.loss_fn)  # own: losses, grad mode
            inputs, targets, first = cut_batch(x, target, self.plan.problem.m, rank, self.holds_first,
                                               self.holds_last and target_needed,
                                               refused_alike(call, self._everywhere, self._batch))
            check_scaler(scaler, self.plan.problem.p, self.group, rank)  # this rank's own argument too
            self._loss_scale = loss_scale(scaler, self.plan.problem.m, self.device, rank)  # starts the scaler
        except SchedcError as err:  # every rank refuses alike only what cut_batch says so of
            self._shapes.tell_failed(lambda: self._plan_check(failed=True), getattr(err, "alike", False))
            self._aborted = self._shapes.broken
            raise
        self._learn_shapes(first)
        return (inputs if self.holds_first else None), (targets if self.holds_last else None)

    def _context(self, inputs: list | None, targets: list | None, deliveries: object) -> StepContext:
        problem = self.plan.problem
        mailbox = Mailbox(self.group, self.rank, problem.num_stages, self.timeout, self.device, self.links,
                          deliveries, call_tag(self._call, self._calls))
        self._calls += 1
        return StepContext(copy_inputs=self._copy_inputs, stages=self.stages, params=self.params,
                           num_stages=problem.num_stages,
                           mailbox=mailbox, inputs=inputs, targets=targets, loss_fn=self.loss_fn,
                           loss_scale=self._loss_scale)

    def _track_grads(self) -> None:
        """Which gradients are final when (``grads_ready``, ``dp_group``); the replicas' bucket check."""
        self._ready = None
        if self.grads_ready is not None or self._dp is not None:
            late, order = {id(p) for p in self.tied.local_params()}, self.plan.orders[self.rank]
            self._ready = GradsReady(order, self.params, late, self.plan.problem.m)
            if self._dp is not None:  # the loss scale, the first rank's input and the boundaries' shapes
                fixed = (self.holds_first and self._shapes.input_meta, sorted(self.boundaries.items()))
                shapes = (self._steps, float(self._loss_scale),  # with a scaler, a device sync
                          self._shapes.samples if self._shapes.variable else fixed)
                self._dp.start(ready_order(order, self.params, late), self._ready.final_now, self.stages,
                               self.loss_fn, shapes, self._shapes.variable)

    # ---- ops ----------------------------------------------------------------------------------

    def _compute(self, op: Compute) -> None:
        handler = HANDLERS.get(op.action.kind)
        if handler is None:
            raise PlanMismatchError(f"rank {self.rank}: no handler for action kind {op.action.kind!r} "
                                    f"(action {op.action}); known kinds: {', '.join(HANDLERS)}")
        if self._ready is not None:
            self._ready.current = op.action
        if not self.record and self._held is None:
            noted(self.rank, op.action, handler, self._ctx, op.action)
            self._release_grads(op.action)
            return
        start, waited = time.perf_counter(), self._ctx.mailbox.waited
        noted(self.rank, op.action, handler, self._ctx, op.action)
        if self.record:
            self.timeline.append(Span(op.action, start - self._t0, time.perf_counter() - self._t0,
                                      self._ctx.mailbox.waited - waited))
        if self._held is not None:
            self.memory.append(Held(op.action, *self._held.measure(self._ctx)))
        self._release_grads(op.action)

    def _release_grads(self, action: Action) -> None:
        """``grads_ready`` with the parameters this action made final, if any."""
        if self._ready is None:
            return
        if action.kind == "F":
            saved = self._ctx.saved[(action.stage, action.mb)]
            self._ready.forward(action.stage, saved.outputs, saved.inputs)
        self._hand_over(self._ready.done(action))

    def _hand_over(self, final: list[torch.Tensor]) -> None:
        """Final leaves to ``grads_ready`` (those with a gradient), then to data-parallel averaging,
        which may start reducing them in place."""
        if self.grads_ready is not None and (with_grads := [p for p in final if p.grad is not None]):
            self.grads_ready(with_grads)
        if self._dp is not None:
            self._dp.ready(final)

    @contextlib.contextmanager
    def _memory_recording(self, inputs: object, targets: object) -> Iterator[None]:
        self.memory = []
        modules = [*self.stages.values(), *([self.loss_fn] if isinstance(self.loss_fn, nn.Module) else [])]
        try:
            with recording(self.record_memory, modules, inputs, targets) as self._held:
                yield
        finally:
            self._held = None

    def _post_recv(self, op: PostRecv) -> None:
        self._ctx.mailbox.post_recv(op, self._meta(op.key))

    def _send(self, op: Send) -> None:
        """Checks the message against the shapes learned for this input, which the receiver's
        buffer has: another size would abort the receiving process inside gloo or NCCL, and the same
        size in another shape or dtype would be read silently as the wrong tensor."""
        ready = self._ctx.mailbox.ready[op.key]  # () for the gradient of an all-integer boundary
        sent, expected = (metas_of(ready, "a message") if ready != () else ()), self._meta(op.key)
        if sent != expected:
            raise PlanMismatchError(changed_message(self.rank, op.key.describe(), sent, expected))
        self._ctx.mailbox.send(op)

    def _meta(self, key: TensorKey) -> Metas:
        if key.kind == "act":
            return self.boundaries[key.stage]
        return grad_metas(self.boundaries[key.stage - 1])

    # ---- checks and set-up --------------------------------------------------------------------

    def _trainable(self) -> dict[int, list[torch.Tensor]]:
        return {s: [p for p in m.parameters() if p.requires_grad] for s, m in self.stages.items()}

    def _plan_check(self, failed: bool = False) -> None:
        """The first call's check every rank passes (``first_call.py``); ``failed``: this rank's own
        checks failed before it, and it only says so."""
        args = (self.plan, self._call, self._batch, self._lossless, self._shapes.variable, self._cut,
                self.rank, self.group, self.device, self.timeout)
        if failed:
            tell_failed(*args)
        else:
            self._lossless, self._everywhere = first_call_check(*args)

    def _learn_shapes(self, first: Metas | None) -> None:
        try:
            self._shapes.learn(first, self._plan_check, self._call)
        finally:
            self._aborted = self._aborted or self._shapes.broken
