"""Train a small model with a schedc plan under torchrun (CPU, gloo).

    torchrun --nproc-per-node 2 examples/train_pipeline.py                       # 1F1B, MLP
    torchrun --nproc-per-node 2 examples/train_pipeline.py --schedule zb-v       # vshape, split backward
    torchrun --nproc-per-node 2 examples/train_pipeline.py --schedule dualpipev  # vshape, DeepSeek's order
    torchrun --nproc-per-node 4 examples/train_pipeline.py --model transformer --solve
    torchrun --nproc-per-node 2 examples/train_pipeline.py --model transformer --tie-embeddings
    torchrun --nproc-per-node 2 examples/train_pipeline.py --plan plan.json      # a plan from schedc
    torchrun --nproc-per-node 4 examples/train_pipeline.py --data-parallel 2     # 2 pipelines of 2 ranks
    torchrun --nproc-per-node 2 examples/train_pipeline.py --precision fp16      # autocast + loss scaling
    torchrun --nproc-per-node 2 examples/train_pipeline.py --model transformer --variable-lengths

Every rank builds the same model (same seed), keeps only the stages the plan puts on it, and
runs an ordinary training loop in which ``runner.step`` replaces forward + backward. The rank
holding the last stage prints the loss of each step, and at the end the loss of a batch it never
trained on (``runner.eval``: forwards only). With ``--data-parallel N`` the world holds N
pipelines (pipeline k: ranks k*p to k*p + p - 1), each over its share of the batch, and the runner
averages every gradient over the ranks that hold the same stages (``dp_group``). ``--precision``
bf16 or fp16 runs each step under ``torch.autocast``; fp16 scales the loss with torch's
``ShardedGradScaler`` over the world, so that every rank skips a step whose gradients overflowed.
``--variable-lengths`` gives the transformer batches of 8 to 16 tokens, another length each step,
and builds the runner with ``variable_shapes=True``.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from dataclasses import replace

import torch
import torch.distributed as dist
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

from schedc import Problem, load_plan
from schedc.baselines import BASELINES, baseline_plan
from schedc.errors import SchedcError
from schedc.exact import fmt
from schedc.plan_json import plan_from_dict, plan_to_dict
from schedc.runtime import (
    PeerError,
    PipelineRunner,
    StepAbortedError,
    clip_grad_norm_,
    split_stages,
    stage_parameters,
)
from schedc.runtime.models import mlp, mlp_loss, transformer, transformer_loss

LOOPED_V2 = ("interleaved-1f1b", "looped-bfs", "interleaved-zb")
"""Schedules for two or more stages per rank (looped): v = 2 unless --stages-per-rank gives more."""
AUTOCAST = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
"""--precision: the dtype each step runs under torch.autocast in (None: none)."""
BATCH = {"mlp": 64, "transformer": 32}
"""Samples in each step's batch of the demo models (``make_model``): --microbatches must divide it."""


def make_plan(args: argparse.Namespace, world: int):
    """The plan: loaded, solved on rank 0 and shared, or a textbook schedule (``world``: the ranks
    of one pipeline)."""
    if args.plan:
        if args.plan.lower().endswith(".toml"):
            raise SchedcError(f"--plan {args.plan} looks like a problem file (schedc profile writes one): "
                              f"solve it first, schedc solve --problem {args.plan} -o plan.json")
        plan = load_plan(args.plan)
        p, ranks = plan.problem.p, world * args.data_parallel
        if p != world:
            split = f"{args.data_parallel} pipelines of {world}" if args.data_parallel > 1 else "one pipeline"
            hint = f", or --data-parallel {ranks // p}" if ranks % p == 0 else ""
            raise SchedcError(f"--plan {args.plan} has p = {p}, but the {ranks} ranks make {split}: run "
                              f"--nproc-per-node {p * args.data_parallel}{hint}")
        return plan
    problem = _problem(args, world)
    if not args.solve:
        return baseline_plan(args.schedule, problem)
    box = [None]
    if dist.get_rank() == 0:
        from schedc.solvers import solve

        box[0] = plan_to_dict(solve(problem, time_limit=10))
    dist.broadcast_object_list(box, src=0)  # one plan for all: solvers may differ run to run
    return plan_from_dict(box[0])


def _problem(args: argparse.Namespace, world: int) -> Problem:
    """The problem of ``--schedule``'s layout (V shape for zb-v and dualpipev, two stages per rank at
    least for the looped interleaved ones) over ``world`` ranks."""
    vshape = args.schedule in ("zb-v", "dualpipev")
    v = 2 if vshape or (args.schedule in LOOPED_V2 and args.stages_per_rank < 2) else args.stages_per_rank
    return Problem(p=world, m=args.microbatches, v=v, placement="vshape" if vshape else "looped",
                   split=not args.no_split)


def make_model(name: str, variable: bool = False):
    """(layers, loss_fn, batch(step) -> (x, y)) of a task the model can learn; ``variable``: the
    transformer's sequences are 8 to 16 tokens long, another length each step."""
    if name == "mlp":
        teacher = torch.nn.Linear(32, 32)

        def batch(step: int):
            x = torch.randn(BATCH["mlp"], 32, generator=torch.Generator().manual_seed(step))
            return x, torch.tanh(teacher(x)).detach()

        return mlp(8, 32), mlp_loss, batch

    def tokens(step: int):  # learn to repeat each token's predecessor (a causal model sees it)
        length = 8 + step % 9 if variable else 16
        seed = torch.Generator().manual_seed(step)
        x = torch.randint(0, 32, (BATCH["transformer"], length), generator=seed)
        y = x.roll(1, 1)
        y[:, 0] = x[:, 0]
        return x, y

    return transformer(blocks=4, width=64, heads=4, seq=16, vocab=32), transformer_loss, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mlp", "transformer"), default="mlp",
                        help="the demo model (default mlp)")
    parser.add_argument("--schedule", help="gpipe 1f1b (default) interleaved-1f1b looped-bfs interleaved-zb "
                                           "zb-h1 zb-h2 zb-v dualpipev")
    parser.add_argument("--solve", action="store_true", help="solve the problem with schedc's solver")
    parser.add_argument("--plan", help="a plan JSON written by schedc (its p: the world size over "
                                       "--data-parallel)")
    parser.add_argument("--microbatches", type=int, help="microbatches per step (m, default 8): a divisor "
                                                         "of the batch, 64 samples (the transformer's 32)")
    parser.add_argument("--stages-per-rank", type=int, help="stages per rank (v, looped; default 1)")
    parser.add_argument("--no-split", action="store_true", help="unsplit backward (B instead of I + W)")
    parser.add_argument("--tie-embeddings", action="store_true",
                        help="transformer: the output head shares the token embedding's weight")
    parser.add_argument("--data-parallel", type=int, default=1, metavar="N",
                        help="N pipelines of world/N ranks, gradients averaged across them")
    parser.add_argument("--clip-norm", type=float, metavar="X",
                        help="clip gradients by the whole pipeline's norm (clip_grad_norm_)")
    parser.add_argument("--precision", choices=tuple(AUTOCAST), default="fp32",
                        help="bf16 or fp16: autocast; fp16 adds loss scaling (ShardedGradScaler)")
    parser.add_argument("--variable-lengths", action="store_true",
                        help="transformer: another sequence length each step (variable_shapes=True)")
    parser.add_argument("--steps", type=int, default=10, help="training steps (default 10)")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate (default 3e-3)")
    args = checked(parser, parser.parse_args())

    dist.init_process_group("gloo")
    dist.barrier()  # every rank connected: one failing at once (os._exit) broke peers still connecting
    try:
        train(args)
    except (SchedcError, PeerError, StepAbortedError) as err:  # a bad plan, a dead peer: a line per rank
        # one write: the lines of two ranks do not interleave mid-line
        rank = dist.get_rank()  # the runner's errors name it already
        where = "" if str(err).startswith(f"rank {rank}:") else f" (rank {rank})"
        sys.stderr.write(f"train_pipeline.py: error{where}: {err}\n")
        _exit_at_once()
    except BaseException:  # anything else (a forward that raises): its traceback, then the same exit
        traceback.print_exc()
        _exit_at_once()
    dist.destroy_process_group()


def _exit_at_once() -> None:
    """Not sys.exit: a gloo collective that timed out (a peer that never reached the first step's
    plan check) stays pending, and torch waits for it in destroy_process_group and at the
    interpreter's exit until the process group's own timeout (30 minutes by default)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def checked(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """Flags that would fail inside training (a traceback per rank) or be ignored silently are a
    usage error here, before any process group exists; the defaults are filled in after."""
    given = [f for f in ("schedule", "microbatches", "stages_per_rank") if getattr(args, f) is not None]
    given += [f for f in ("solve", "no_split") if getattr(args, f)]
    if args.plan and given:
        parser.error(f"--plan gives the schedule and its problem: drop --{given[0].replace('_', '-')}")
    if args.schedule is not None and args.schedule not in BASELINES:
        parser.error(f"--schedule {args.schedule} is none of {', '.join(BASELINES)}")
    if args.schedule in ("zb-v", "dualpipev") and args.stages_per_rank not in (None, 2):
        parser.error(f"--schedule {args.schedule} holds 2 stages per rank (V shape), not "
                     f"{args.stages_per_rank}")
    if args.tie_embeddings and args.model != "transformer":
        parser.error("--tie-embeddings ties the transformer's embedding and head: add --model transformer")
    if args.variable_lengths and args.model != "transformer":
        parser.error("--variable-lengths varies the transformer's sequences: add --model transformer")
    for flag, value in (("--lr", args.lr), ("--clip-norm", args.clip_norm)):
        if value is not None and not 0 < value < float("inf"):
            parser.error(f"{flag} must be a positive number, got {value}")
    for flag, value in (("--steps", args.steps), ("--microbatches", args.microbatches),
                        ("--stages-per-rank", args.stages_per_rank), ("--data-parallel", args.data_parallel)):
        if value is not None and value < 1:
            parser.error(f"{flag} must be at least 1, got {value}")
    if args.schedule in LOOPED_V2 and args.stages_per_rank == 1:
        parser.error(f"--schedule {args.schedule} needs 2 or more stages per rank, not 1")
    args.schedule = args.schedule or "1f1b"
    args.microbatches = 8 if args.microbatches is None else args.microbatches
    args.stages_per_rank = 1 if args.stages_per_rank is None else args.stages_per_rank
    if not args.plan and BATCH[args.model] % args.microbatches:
        parser.error(f"--microbatches {args.microbatches} does not divide the {args.model}'s batch of "
                     f"{BATCH[args.model]} samples")
    unsplit = _problem(args, 2)  # the layout's refusal of an unsplit backward holds for any world size
    why_not = BASELINES[args.schedule].why_not
    refusal = why_not(unsplit) if args.no_split and not args.solve else None
    if refusal is not None and why_not(replace(unsplit, split=True)) is None:
        parser.error(f"--no-split: --schedule {args.schedule} {refusal}")
    return args


def make_groups(replicas: int) -> tuple:
    """(pipeline group, data-parallel group, rank in the pipeline, pipeline index). Every rank makes
    every group, as new_group requires."""
    rank, world = dist.get_rank(), dist.get_world_size()
    if replicas < 1 or world % replicas:
        raise SchedcError(f"--data-parallel {replicas} does not divide the world of {world} ranks")
    p = world // replicas
    if replicas == 1:
        return None, None, rank, 0
    pipelines = [dist.new_group(list(range(k * p, (k + 1) * p))) for k in range(replicas)]
    replicas_of = [dist.new_group(list(range(r, world, p))) for r in range(p)]
    return pipelines[rank // p], replicas_of[rank % p], rank % p, rank // p


def train(args: argparse.Namespace) -> None:
    rank = dist.get_rank()
    torch.manual_seed(0)
    group, dp_group, pp_rank, line = make_groups(args.data_parallel)
    plan = make_plan(args, dist.get_world_size() // args.data_parallel)
    layers, loss_fn, batch = make_model(args.model, args.variable_lengths)
    ties = tie_embeddings(layers, plan) if args.tie_embeddings else []
    stages = split_stages(layers, plan.problem, pp_rank)
    runner = PipelineRunner(plan, stages, loss_fn=loss_fn, group=group, ties=ties, dp_group=dp_group,
                            variable_shapes=args.variable_lengths)
    params = {id(p): p for s in stages.values() for p in s.parameters()}  # a shared one once
    optimizer = torch.optim.AdamW(list(params.values()), lr=args.lr)
    dtype = AUTOCAST[args.precision]
    scaler = ShardedGradScaler("cpu") if args.precision == "fp16" else None  # all-reduces its inf checks
    torch.manual_seed(1 + rank)  # built alike; from here each rank draws its own (dropout masks)
    if rank == 0:
        say(f"{plan.source}: {plan.problem.describe()}; simulated makespan {fmt(plan.makespan)}")
    for step in range(args.steps):
        x, y = (part.chunk(args.data_parallel)[line] for part in batch(step))  # this pipeline's share
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            loss = runner.step(x, target=y, scaler=scaler)
        if scaler is not None:
            scaler.unscale_(optimizer)  # collective: every rank learns whether any gradient overflowed
        if args.clip_norm is not None:  # the norm over every rank's gradients: collective, on every rank
            clip_grad_norm_(runner, args.clip_norm)
        if scaler is not None:
            scaler.step(optimizer)  # skipped on every rank alike after an overflow
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad()
        if loss is not None:
            say(f"step {step:3d}  loss {loss.item():.4f}  (rank {rank})")  # its share's loss
    x, y = (part.chunk(args.data_parallel)[line] for part in batch(10**6))  # a batch it never trained on
    losses: list = []
    for stage in stages.values():
        stage.eval()  # dropout and the like off; runner.eval runs forwards only
    with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):  # as the steps: the same dtypes
        runner.eval(x, target=y, losses=losses)
    if losses:
        say(f"held-out loss {torch.stack(losses).mean().item():.4f}  (rank {rank})")


def tie_embeddings(layers: list, plan) -> list:
    """nanoGPT's tie: the head uses the token embedding's Parameter (initialised at GPT-2's scale,
    0.02: at 1 the tied head's first logits gave a loss of 50). Where the two sit in different
    stages, the tie keeps the copies equal and sums their gradients; in one stage it is one
    Parameter already, and no tie is declared (a tie needs two stages)."""
    embedding = layers[0].tokens.weight
    with torch.no_grad():
        embedding.normal_(0.0, 0.02)
    layers[-1][1].weight = embedding
    tie = stage_parameters(layers, plan.problem, embedding)
    return [tie] if len(tie) > 1 else []


def say(line: str) -> None:
    """One write per line: torchrun's unbuffered output wrote print's text and newline apart, and
    lines of two ranks ran together."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
