"""The ``schedc solve`` subcommand: the fastest plan within the cap, with its proven gap.

Progress goes to stderr, one line per improvement (the summary and file notes go to stdout), so
``schedc solve ... > summary.txt`` still shows the search. Every failure is a SchedcError; an
infeasible cap fails before any search and writes nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from schedc.cli_outputs import add_output_options, check_outputs_for, write_and_report
from schedc.cli_problem import add_problem_options, problem_from_args
from schedc.cli_summary import fastest, fmt_peak, print_plan_summary
from schedc.errors import ProblemError, SchedcError, shown, to_stderr
from schedc.exact import fmt, fmt_exact, percent, plain_digits
from schedc.plan import OBJECTIVES, Plan
from schedc.search_stops import Stops, handled
from schedc.write_signals import Terminated

if TYPE_CHECKING:
    from rich.console import Console

    from schedc.solvers.progress import Progress

OVERRUN, OVERRUN_SLACK = 1.5, 1.0
"""A run longer than ``OVERRUN`` times its limit plus ``OVERRUN_SLACK`` seconds, at least half of the
excess before its first plan, says why (``_overrun``)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``schedc solve``; its defaults (time limit, backends) are read from the solver modules
    so the help never disagrees with what runs."""
    from schedc.solvers.backends import BACKENDS, CPSAT_MAX_TASKS, WHOLE_SEARCH_MAX_TASKS
    from schedc.solvers.portfolio import DEFAULT_TIME_LIMIT
    from schedc.solvers.wall_guard import WALL_GUARD

    parser = subparsers.add_parser(
        "solve", help="find the fastest schedule within the activation cap (CP-SAT)",
        description="Search for the schedule of least makespan (or largest rank span) within the cap, "
                    "and prove a lower bound. Stops at a proven optimum, the time limit, Ctrl-C, "
                    "SIGTERM (then exits 143) or (LNS) a window over the whole plan that cannot "
                    "improve, and returns the best plan found.")
    add_problem_options(parser)
    group = parser.add_argument_group("search")
    group.add_argument("--time-limit", metavar="S", default=str(DEFAULT_TIME_LIMIT),
                       help=f"seconds for the whole search (default {DEFAULT_TIME_LIMIT:g}); with "
                            "--workers 1, CP-SAT's deterministic time, so that the plan repeats, which "
                            "an idle core runs at 0.1 to 1 unit a second by model: a wall-clock guard "
                            f"of {WALL_GUARD:g} times the limit plus a second then ends the search, "
                            "unrepeatably, and a note on stderr says so")
    group.add_argument("--workers", metavar="N",
                       help="CP-SAT worker threads (default: the cores this process may use, "
                       "by its CPU affinity and cgroup CPU quota)")
    group.add_argument("--seed", metavar="N",
                       help="random seed; with --workers 1 the same seed gives the same plan (default 0)")
    group.add_argument("--objective", choices=OBJECTIVES, default="makespan",
                       help="makespan (synchronised step; the default) or span (largest per-rank span)")
    group.add_argument("--backend", choices=("auto", *BACKENDS), default="auto",
                       help=f"auto (the default): cp-sat up to {CPSAT_MAX_TASKS:,} tasks, else lns; "
                            "cp-sat: one model of the whole problem (with more than one worker, a "
                            "search that stalls or still improves late with a gap left may end in "
                            "window LNS, and its plan then says lns; a makespan search of at most "
                            f"{WHOLE_SEARCH_MAX_TASKS} tasks keeps the whole time); lns: CP-SAT over time "
                            "windows of the heuristic's plan; list: the list-scheduling heuristics alone")
    group.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_output_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    problem = problem_from_args(args)
    check_outputs_for(problem, args)  # before the search, which would otherwise be lost
    options = dict(
        time_limit=positive_seconds(args.time_limit, "--time-limit"),
        workers=None if args.workers is None else _workers(args.workers),
        seed=0 if args.seed is None else _int(args.seed, "--seed"),
        objective=args.objective,
        progress=ProgressLines(quiet=args.quiet),  # one per run: stderr may work again
        backend=args.backend,
    )
    if args.backend == "list":  # after every check: a bad option is one line alone
        _note_unused_search_options(args)
    else:
        _note_crowded_cores(options["workers"])
    stops = Stops()
    with handled(stops):
        plan = _search(problem, options, stops)
        cut_by = stops.stopped_by() if plan.status != "optimal" else None

        def report(console: Console) -> None:
            print_plan_summary(plan, console)
            for line in summary_lines(plan, stopped=cut_by, time_limit=options["time_limit"],
                                      first_plan=options["progress"].first):
                console.print(line, highlight=False, markup=False)

        write_and_report(plan, args, report, built=True)
    return 143 if stops.terminated else 0  # the plan written, the status a SIGTERM gives


def _search(problem: object, options: dict, stops: Stops) -> Plan:
    """The search, stopped by Ctrl-C or SIGTERM (``search_stops``) with its best plan."""
    from schedc.solvers import solve, wall_guard

    try:
        with wall_guard.watched() as cuts:
            plan = solve(problem, **options)
    except (KeyboardInterrupt, ImportError) as err:  # once a plan exists, solve() returns it instead
        if isinstance(err, ImportError) and not (signal.SIGTERM in stops.during and isinstance(
                err.__cause__ or err.__context__, KeyboardInterrupt)):
            raise  # an ImportError of its own, or a Ctrl-C in OR-Tools' C++ start-up: main() says 130
        why = ("interrupted again before the search had handed over its best plan; nothing written (one "
               "Ctrl-C stops the search and keeps the plan)") if len(stops.during) > 1 else \
            "interrupted before any plan was found; nothing written"
        if signal.SIGTERM in stops.during:
            to_stderr(f"schedc: {why.replace('interrupted', 'terminated', 1)}")
            raise Terminated from None
        raise SchedcError(why) from None
    finally:
        stops.searching = False
    if cuts.count and not stops.during:
        _note_guard_cut(options["seed"])
    return plan


def summary_lines(plan: Plan, stopped: str | None = None, time_limit: float | None = None,
                  first_plan: float | None = None) -> list[str]:
    """Search time (and what cut it short: ``stopped``, "Ctrl-C" or "SIGTERM", or what ran past
    ``time_limit``: the phases before the search, by when the ``first_plan`` came; ``_overrun``) and
    the best baseline that fits the same cap (what people would pick by hand)."""
    from schedc.solvers.incumbent import baseline_plans

    cut = f", stopped by {stopped} (the best plan found by then)" if stopped else \
        _overrun(plan, time_limit, first_plan)
    lines = [f"solved in {plan.solve_seconds:.2f} s{cut}"] if plan.solve_seconds is not None else []
    plans = baseline_plans(plan.problem, plan.objective)
    baselines = [b for b in plans if b.fits()]
    what = "makespan" if plan.objective == "makespan" else "largest span"
    if not baselines:
        return [*lines, _none_fits(plans, what)]
    best = fastest(baselines, lambda b: b.value)
    if plan.value < best.value:
        shorter = f" (the solver's is {percent(1 - plan.value / best.value)} shorter)"
    elif plan.value == best.value:
        shorter = " (the solver's is as short)"
    else:  # the baselines are among the solver's starting points, so only a plan passed in by hand
        shorter = f" (shorter than the solver's by {percent(1 - best.value / plan.value)})"
    return [*lines, f"best fitting baseline: {best.source}, {what} {fmt(best.value)}{shorter}"]


def _overrun(plan: Plan, time_limit: float | None, first_plan: float | None) -> str:
    """Why a run took far longer than its limit, where the phases before the search did: near a
    million tasks they took 25 s of a run given 5 (docs/cli.md), and a bare "solved in 31.83 s"
    reads as a bug. A search's own overrun (a CP-SAT step; one worker's wall-clock guard, 3 times
    its deterministic limit) and small ones pass unremarked."""
    seconds = plan.solve_seconds
    if None in (time_limit, first_plan, seconds) or seconds <= OVERRUN * time_limit + OVERRUN_SLACK:
        return ""
    if first_plan - time_limit < (seconds - time_limit) / 2:  # the search, not its start, ran over
        return ""
    return (f", past the {time_limit:g} s time limit: its first plan came at {first_plan:.2f} s, and "
            f"the limit bounds the search, not what must run before it (the first plan, the baselines' "
            f"replays, the bounds), which grows with the tasks ({plan.problem.num_tasks:,} here)")


def _none_fits(plans: Sequence[Plan], what: str) -> str:
    """What the cap costs: the fastest baseline and where it goes over."""
    if not plans:
        return "no baseline applies to this problem"
    first = fastest(list(plans), lambda b: b.value)
    caps, peaks = first.problem.mem, first.timeline.peak_mem
    rank = next(r for r, cap in enumerate(caps) if cap is not None and peaks[r] > cap)
    return (f"no baseline fits the cap: the fastest, {first.source} ({what} {fmt(first.value)}), "
            f"peaks at {fmt_peak(peaks[rank], caps[rank])} on rank {rank}, over its cap of "
            f"{fmt_exact(caps[rank])}")


class ProgressLines:
    """The progress callback of one run: a line per improvement on stderr. A closed or broken stderr
    (``2>&1 | head -3``) ends the lines, not the search; after it broke once nothing more is tried
    there (a search reports hundreds of improvements)."""

    def __init__(self, quiet: bool = False) -> None:
        self.lost = quiet  # --quiet: no lines, as after a broken stderr, but ``first`` still kept
        self.first: float | None = None
        """When the first plan was reported (after the phases before the search), quiet or not."""

    def __call__(self, event: Progress) -> None:
        if self.first is None:
            self.first = event.elapsed
        self.line(f"  best {fmt(event.best):>8}   bound {fmt(event.bound):>8}   gap {percent(event.gap):>6}"
                  f"   {event.elapsed:6.2f} s   {event.source}")

    def line(self, text: str) -> None:
        """``text`` on stderr, unless stderr is gone (None: ``print`` would write to stdout) or broke."""
        if self.lost or sys.stderr is None:
            return
        try:
            print(text, file=sys.stderr, flush=True)
        except OSError:  # BrokenPipeError among them
            self.lost = True


def positive_seconds(text: str, flag: str) -> float:
    from schedc.solvers.arguments import MAX_TIME_LIMIT

    plain_digits(text, flag)
    try:
        value = float(text)
    except ValueError:
        raise ProblemError(f"{flag} must be a number of seconds, got {shown(text)}") from None
    if not 0 < value <= MAX_TIME_LIMIT:
        raise ProblemError(f"{flag} must be a positive number of seconds, at most 1e9 (about 30 years), "
                           f"got {shown(text)}")
    return value


def _int(text: str, flag: str, bits: bool = True) -> int:
    from schedc.solvers.arguments import INT32  # CP-SAT's seed is 32-bit: a larger one crashes OR-Tools

    plain_digits(text, flag)
    try:
        value = int(text)
    except ValueError:
        raise ProblemError(f"{flag} must be an integer, got {text!r}") from None
    if bits and not -INT32 <= value < INT32:
        raise ProblemError(f"{flag} must be a 32-bit integer (-2**31 <= n < 2**31), got {value}")
    return value


def _workers(text: str) -> int:
    from schedc.solvers.arguments import MAX_WORKERS

    value = _int(text, "--workers", bits=False)
    if not 1 <= value <= MAX_WORKERS:
        raise ProblemError(f"--workers must be from 1 to {MAX_WORKERS} (CP-SAT's limit), got {value}")
    return value


def _note_unused_search_options(args: argparse.Namespace) -> None:
    """--workers and --seed steer CP-SAT, which the list backend never runs: say what each still
    does there, rather than take them silently (--workers 1 counts the heuristics' budget in work,
    so it did change the plan where the old note said it did not apply)."""
    if args.seed is not None:
        to_stderr("schedc: note: --seed does not apply to --backend list (its heuristics run no "
                  "CP-SAT and draw nothing at random)")
    if args.workers is not None:
        to_stderr("schedc: note: --workers runs nothing in parallel with --backend list (its "
                  "heuristics run no CP-SAT): 1 counts their budget in work, so the plan repeats, and "
                  "more in wall time, so it follows the machine's speed")


def _note_guard_cut(seed: int) -> None:
    """With --workers 1 the plan repeats only where deterministic time (or a proof) ends every
    search: say so when the wall-clock guard ended one, rather than let a user count on it."""
    to_stderr("schedc: note: the wall-clock guard of one-worker searches (--workers 1, the default on "
              "one core) ended a search before its deterministic time ran out: this plan or its bound "
              f"depends on the machine's speed and load, and another run with --seed {seed} may give "
              "another")


def _note_crowded_cores(workers: int | None) -> None:
    """Many workers on few cores run past the time limit while CP-SAT starts them (measured: 64
    workers on 2 cores ran 7 s for --time-limit 3, in 1.5 GB): say so."""
    from schedc.solvers.cores import usable_cores

    cores = usable_cores()
    if workers is not None and workers > 2 * cores:
        to_stderr(f"schedc: note: {workers} workers share {cores} usable core{'s' * (cores > 1)}: each "
                  "gets less done, and starting them can run past --time-limit")
