"""One process group per directed link: the transport NCCL needs for pipeline messages.

ProcessGroupNCCL runs the unbatched sends and receives between two ranks on one stream, in issue
order, and an NCCL send or receive holds its stream until the peer's matching call runs. With both
directions on one stream, rank a's queued send can wait for a receive that rank b queued behind
its own send to a, which waits for a receive queued behind a's send: a deadlock on 1F1B as soon as
messages exceed NCCL's buffers. A group per direction (src -> dst) gives each direction its own
communicator and stream, so a stream only ever holds one direction's messages in one order; with
receives posted in the sender's order (``lowering.in_send_order``) every link pairs up, whatever
the plan. Megatron and torch's pipelining use the same per-pair communicators.

Groups are made once, collectively: every rank of the world creates every link group of every
pipeline in the same sorted order, as torch's ``new_group`` asks (and as Megatron builds its groups).
On a sub-group a rank knows only its own pipeline's links, so the ranks first gather everyone's
outgoing links over the world. (torch's ``use_local_synchronization``, where only a group's members
take part, names a group by its members and the number of groups the rank already has: on a
pipeline of 3 or more ranks a middle rank has made more link groups than its neighbour by the
time they build theirs, the names differ, and both wait forever.) Each link is then used once (one
element each way) so that NCCL's lazy communicator set-up happens here, in that order, and not
inside a step.
"""

from __future__ import annotations

import contextlib
import datetime

import torch
import torch.distributed as dist

from schedc.problem import Problem

from .errors import PeerTimeoutError
from .waits import start, wait


def link_pairs(problem: Problem) -> list[tuple[int, int]]:
    """Directed rank pairs (src, dst) that carry activations or gradients, sorted."""
    rank = problem.stage_rank
    pairs = set()
    for s in range(problem.num_stages - 1):
        if rank[s] != rank[s + 1]:
            pairs |= {(rank[s], rank[s + 1]), (rank[s + 1], rank[s])}
    return sorted(pairs)


class Links:
    """``route(src, dst)``: the group and the peer's rank in it for a message from src to dst."""

    def __init__(self, problem: Problem, group: dist.ProcessGroup | None, rank: int, timeout: float,
                 device: torch.device) -> None:
        self.rank, self.timeout, self.device = rank, timeout, device
        world = group is None or group == dist.group.WORLD
        self.globals = [r if world else dist.get_global_rank(group, r) for r in range(problem.p)]
        pairs = [(self.globals[src], self.globals[dst]) for src, dst in link_pairs(problem)]
        if not world:
            pairs = _world_links(pairs, self.globals[rank], device, timeout)
        self.groups: dict[tuple[int, int], dist.ProcessGroup] = {}
        for src, dst in pairs:
            made = _new_group(sorted({src, dst}), _timeout_of(group, device, timeout), rank, timeout)
            if self.globals[rank] in (src, dst):
                self.groups[self.globals.index(src), self.globals.index(dst)] = made
        self._warm_up()

    def route(self, src: int, dst: int) -> tuple[dist.ProcessGroup, int]:
        """(group, the other end's rank in that group) for a message src -> dst on this rank."""
        link = self.groups[src, dst]
        other = dst if src == self.rank else src
        return link, dist.get_group_rank(link, self.globals[other])

    def close(self, settled: bool) -> None:
        """Destroys the link groups: a runner builds its own, and torch keeps a group (gloo: 5 file
        descriptors and 3 threads per link and rank) until it is destroyed, so rebuilt runners ran a
        process out of descriptors. Local, without a barrier (one waited forever, or paired with a
        later collective, where a peer's step had failed): after this rank's step every message it
        sent has left, and a peer still reading one gets it (gloo closes a socket after its queued
        data; NCCL's graceful shutdown waits for the matched kernels). After a failed step
        (``settled`` False) a receive posted ahead may never be matched, which that shutdown would
        wait for: NCCL's links are then aborted."""
        groups, self.groups = list(self.groups.values()), {}
        if not dist.is_initialized():  # the world was destroyed, every group with it
            return
        for link in groups:
            with contextlib.suppress(ValueError):  # destroyed already
                if settled or self.device.type != "cuda":
                    dist.destroy_process_group(link)
                else:
                    dist.distributed_c10d._abort_process_group(link)

    def _warm_up(self) -> None:
        """One element over every link of this rank, links in the same sorted order everywhere:
        the first pending link always has both ends waiting on it, so this cannot deadlock."""
        for src, dst in sorted(self.groups):
            self._touch(src, dst)

    def _touch(self, src: int, dst: int) -> None:
        link, peer = self.route(src, dst)
        what = f"rank {self.rank} set up the link {src} -> {dst}"
        data = torch.zeros(1, device=self.device)
        if src == self.rank:
            work = start(lambda: dist.isend(data, group=link, group_dst=peer), what)
        else:
            work = start(lambda: dist.irecv(data, group=link, group_src=peer), what)
        wait(work, self.timeout, what)


def make_links(problem: Problem, group: dist.ProcessGroup | None, rank: int, timeout: float | None,
               device: torch.device, wanted: bool) -> Links | None:
    """A process group per directed link where asked (``wanted``) and always on CUDA, where NCCL
    needs them; on CUDA the device is made the current one first."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if not (wanted or device.type == "cuda") or not link_pairs(problem):
        return None
    return Links(problem, group, rank, timeout, device)


def _timeout_of(group: dist.ProcessGroup | None, device: torch.device, timeout: float | None) -> dict:
    """The link groups' own timeout: the runner's, else the parent group's. torch's default for a
    new group is its backend's (30 minutes on gloo), whatever the parent's: building the links
    waited that long for a peer that had failed, and timeout=None meant 30 minutes, not the
    parent's."""
    if timeout is not None:
        return {"timeout": datetime.timedelta(seconds=timeout)}
    try:
        parent = (group or dist.group.WORLD)._get_backend(device).options._timeout
    except (AttributeError, RuntimeError):  # a backend without options: torch's default
        return {}
    return {"timeout": parent}


def _world_links(mine: list[tuple[int, int]], me: int, device: torch.device, timeout: float | None
                 ) -> list[tuple[int, int]]:
    """Every pipeline's directed links (global ranks), sorted: each rank sends its outgoing links'
    destinations over the world (padded to the widest row, -1 for none). The waits are timed on CUDA
    too: blocking the CPU costs nothing while the runner is built, and a rank that failed first
    then ends its peers' wait in one line, not at NCCL's watchdog."""
    what = f"global rank {me} gathered every pipeline's links (every rank of the world builds its runner)"
    ends = sorted(dst for src, dst in mine if src == me)
    width = torch.tensor([len(ends)], device=device)
    wait(start(lambda: dist.all_reduce(width, op=dist.ReduceOp.MAX, async_op=True), what), timeout, what)
    row = torch.full((int(width.item()),), -1, dtype=torch.int64, device=device)
    row[:len(ends)] = torch.tensor(ends, dtype=torch.int64)
    rows = [torch.empty_like(row) for _ in range(dist.get_world_size())]
    wait(start(lambda: dist.all_gather(rows, row, async_op=True), what), timeout, what)
    return sorted((src, dst) for src, ends in enumerate(rows) for dst in ends.tolist() if dst >= 0)


def _new_group(members: list[int], limit: dict, rank: int, timeout: float | None) -> dist.ProcessGroup:
    """A link's group; a peer that never builds it (it failed first) is a one-line error."""
    try:
        return dist.new_group(members, **limit)
    except RuntimeError as err:
        if "timeout" not in str(err).lower() and "timed out" not in str(err).lower():
            raise
        within = "the process group's timeout" if timeout is None else f"{timeout:g} s"
        raise PeerTimeoutError(f"rank {rank} waited for global ranks {members} to build a link's process "
                               f"group (every rank builds its runner, with link_groups alike): none within "
                               f"{within}") from None
