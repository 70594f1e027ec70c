"""The stored plan's commands (issue 25): where the plan is stored for the backend the options chose, and
the entry points of `execute --detach`, `execute --resume` with no plan file, and verify's step.

The store: ZooKeeper mode (--zookeeper, with or without --bootstrap-server) keeps it in znodes written with
kazoo (backends/zookeeper/stored_plan.py); the admin API alone (KRaft) in the topic __reassign_cli_plan
(backends/admin/plan_topic.py). The health signals come from the same place (backends/*/health.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend
    from reassign_cli.cli.common import Options
    from reassign_cli.ops.step import StepEnv


@contextlib.contextmanager
def step_env(backend: Backend) -> Iterator[StepEnv]:
    """The step's environment for `backend`: its plan store (backends/plan_stores.open_store, the one
    place the store is chosen) and its health signals."""
    from reassign_cli.backends.plan_stores import open_store
    from reassign_cli.backends.zookeeper.backend import ZkBackend
    from reassign_cli.ops.step import StepEnv
    from reassign_cli.ops.stored_batches import gate

    cache: dict[str, int] = {}
    # ZooKeeper alone cannot add moves beside running ones: its steps run batches (ops/stored_batches.py)
    alone = isinstance(backend, ZkBackend) and backend.admin is None
    from reassign_cli.cli.common import log_dir_mover

    mover = log_dir_mover(backend)  # the adaptive throttle's measure (ops/stored_rates.py)
    try:
        with open_store(backend) as store:
            yield StepEnv(
                backend,
                store,
                health=_health(backend, cache),
                sizer=mover,
                gate=gate(backend),
                additional=not alone,
            )
    finally:
        if mover is not None:
            mover.close()


def _health(backend: Backend, cache: dict[str, int]) -> Any:
    """The cluster's health signals: ZooKeeper's reads in ZooKeeper mode, the admin API's otherwise."""
    from reassign_cli.backends.zookeeper.backend import ZkBackend

    if isinstance(backend, ZkBackend):
        from reassign_cli.backends.zookeeper import health as zh

        session = backend.session
        return lambda: zh.gather(session, min_isr_cache=cache)
    from reassign_cli.backends.admin import health as ah

    admin = backend.admin  # type: ignore[attr-defined]
    return lambda: ah.gather(admin, min_isr_cache=cache)


def read_stored(backend: Backend) -> Any:
    """The stored plan as read (backends/plan_store.Versioned), or None: for any verify, ZooKeeper alone too."""
    from reassign_cli.backends.admin.backend import AdminBackend
    from reassign_cli.backends.plan_stores import open_store
    from reassign_cli.backends.zookeeper.backend import ZkBackend

    if not isinstance(backend, ZkBackend | AdminBackend):
        return None
    with open_store(backend) as store:
        return store.read()


def stored_line(plan: Any, connection: Any) -> str:
    """Names the stored plan for a verify of another plan's file: its throttles stay while it has work."""
    from reassign_cli.core import stored_plan as sp
    from reassign_cli.ops import stored

    return (
        f"Another plan is stored in the cluster (plan SHA-256 {plan.plan_sha256[:12]}, stored by "
        f"{plan.origin.user}@{plan.origin.host} at {sp.utc(plan.origin.at)}; {sp.progress(plan).line()}): "
        f"throttles are kept while it has work left. Carry it on with: {stored.carry_on_command(connection)}"
    )


def step_with(opts: Options, backend: Backend, *, advance: bool, ignore: frozenset[str]) -> Any:
    """One step of the stored plan on an open backend (its StepResult)."""
    from reassign_cli.backends.plan_store import me
    from reassign_cli.core import stored_plan as sp
    from reassign_cli.ops import step as st

    with step_env(backend) as env:
        return st.step(env, me(), sp.watch(), advance=advance, ignore=ignore)


def say_result(opts: Options, result: Any) -> None:
    """A step's lines on stderr; under --format json its document on stdout."""
    from reassign_cli.ops import stored
    from reassign_cli.render import Output

    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    if opts.json:
        import orjson

        out.result(orjson.dumps(stored.describe(result)).decode())
        return
    for line in stored.lines(result):
        out.info(line)


def verify_stored(
    opts: Options,
    *,
    advance: bool,
    ignore: frozenset[str],
    facts: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> int:
    """`verify` with no plan file: one step of the stored plan (only a report with --no-advance). Nothing
    stored: say so; exit 0 when nothing reassigns, 4 when something does. For --metrics-file: `labels` gets
    the stored plan's plan_sha256 as soon as it is read, `facts` the plan as stored after the step (none
    once it finished) and the health checks the step applied (ops/verify_metrics.step_facts)."""
    from reassign_cli.cli.common import open_backend
    from reassign_cli.ops import stored
    from reassign_cli.ops.step import StepResult
    from reassign_cli.render import Output

    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts, admin_too=True) as backend:
        # nothing stored: said so through any connection (ZooKeeper alone too, which cannot step a plan)
        result = StepResult(stored=False)
        found = read_stored(backend)
        if found is not None:
            if labels is not None:
                from reassign_cli.render.plan_metrics import SHA_DIGITS

                labels["plan_sha256"] = found.plan.plan_sha256[:SHA_DIGITS]
            result = step_with(opts, backend, advance=advance, ignore=ignore)
            if facts is not None:
                from reassign_cli.ops.verify_metrics import step_facts

                facts.update(step_facts(backend, result.verdict))
        if not result.stored:
            state = backend.read_state(None)
            moving = sorted(
                (t, p) for t, topic in state.topics.items() for p in topic.replicas if topic.is_reassigning(p)
            ) + sorted(state.reassigning_elsewhere)
            if moving:
                out.info(f"No plan is stored in the cluster; {len(moving)} partitions are reassigning")
                return 4
            out.info("No plan is stored in the cluster, and nothing is reassigning")
            return 0
    say_result(opts, result)
    return stored.exit_code(result)


def resume_stored(opts: Options, *, interval: float, ignore: frozenset[str]) -> int:
    """`execute --resume` with no plan file: take the stored plan over in the foreground, step until done."""
    from reassign_cli.cli.common import open_backend
    from reassign_cli.errors import InvalidInputError
    from reassign_cli.ops import stored
    from reassign_cli.render import Output

    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts, admin_too=True) as backend, step_env(backend) as env:
        result = stored.drive(env, out.info, interval=interval, ignore=ignore)
    if not result.stored:
        raise InvalidInputError(
            "execute --resume without --reassignment-json-file takes over the stored plan, and no plan is "
            "stored in the cluster"
        )
    say_result(opts, result)
    return stored.exit_code(result)


def detach(opts: Options, reassignment_file: str, kw: dict[str, Any]) -> int:
    """`execute --max-moves-per-broker N --detach`: validate, store, first step, exit 0."""
    from reassign_cli.cli.common import log_dir_mover, open_backend
    from reassign_cli.cli.inputs import read_input_file
    from reassign_cli.core.schedule import Schedule
    from reassign_cli.ops import stored
    from reassign_cli.ops.request import ExecuteRequest
    from reassign_cli.ops.stored_health import with_ignore
    from reassign_cli.render import Output
    from reassign_cli.render.progress import ExecuteReport

    req = ExecuteRequest(
        file_name=reassignment_file,
        data=read_input_file(reassignment_file),
        throttle=kw["throttle"],
        log_dir_throttle=kw["log_dir_throttle"],
        rollback_file=kw["rollback_file"],
        max_moves=kw["max_moves"],
        batch_size=kw["batch_size"],
        connection=opts.typed,
        disallow_rf_change=kw["disallow_rf_change"],
    )
    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts, admin_too=True) as backend, step_env(backend) as env:
        mover = log_dir_mover(backend)
        req.bootstrap_server = opts.bootstrap if mover is not None else None
        try:
            report = ExecuteReport(out, json=opts.json)
            schedule = Schedule(hours=kw["hours"], not_before=kw["not_before"]).to_dict()
            if kw.get("on_under_min_isr") == "cancel":
                from reassign_cli.ops import isr_cancel

                schedule[isr_cancel.POLICY] = isr_cancel.CANCEL
            if stored.places_dirs(req.data):
                from reassign_cli.ops.stored_log_dirs import with_dirs

                schedule = with_dirs(
                    schedule, kw.get("max_moves_per_disk"), bool(kw.get("one_broker_at_a_time"))
                )
            if kw.get("rate_loop") is not None:
                from reassign_cli.ops.stored_rates import with_loop

                schedule = with_loop(schedule, kw["rate_loop"])
            if kw.get("log_dir_loop") is not None:
                from reassign_cli.ops import stored_logdir_rates
                from reassign_cli.ops.rate_loop import RateLoop

                schedule = stored_logdir_rates.with_loop(schedule, RateLoop(settings=kw["log_dir_loop"]))
            schedule = with_ignore(schedule, kw["ignore_health"])
            return stored.detach(env, req, report, kw["order"], mover, schedule)
        finally:
            if mover is not None:
                mover.close()


@contextlib.contextmanager
def foreground(backend: Backend, req: Any, order: Any, pacer: Any, dir_pacer: Any = None) -> Iterator[None]:
    """A foreground paced or batched execute (the window given the brokers; batches through ZooKeeper alone,
    and --batch-size on every backend): its plan stored in the cluster before the first move
    (ops/stored.Keeper, set on the window's `pacer`, or on the request for the batches) and deleted at its
    end, whatever the end (a kill -9 leaves it for cron). Not for a dry run."""
    # the window (ops/pacing._Window) runs where moves are added beside running ones; batches (ZooKeeper
    # alone's --max-moves-per-broker, --batch-size) are each marked in the stored plan before their submit
    from reassign_cli.backends.protocol import adds_moves
    from reassign_cli.backends.zookeeper.backend import ZkBackend

    usable = adds_moves(backend)  # the window: the admin API, or ZooKeeper mode with the brokers
    # --batch-size runs batches on every backend (through the brokers too: the next batch once the last ended)
    batches = req.batch_size is not None or (
        not usable and isinstance(backend, ZkBackend) and req.max_moves is not None
    )
    from reassign_cli.ops.stored import places_dirs

    # a plan that names log dirs is stored when its log-dir moves are paced (--max-moves-per-disk: their queue
    # kept with it, ops/stored_log_dirs.py), by the window or in batches; without, it is not stored
    dirs = places_dirs(req.data)
    unstored = not batches and (req.max_moves is None or not usable)
    unstored = unstored or bool(dirs and dir_pacer is None)
    if req.ignore_health and unstored:
        from reassign_cli.errors import UsageError

        raise UsageError(
            "--ignore-health is kept with a stored plan: it needs --detach, --max-moves-per-broker or "
            "--batch-size; a plan that names log dirs, --max-moves-per-disk too"
        )
    if req.dry_run or unstored:
        yield
        return
    schedule = None
    if dirs:
        from reassign_cli.ops.stored_log_dirs import with_dirs

        schedule = with_dirs({}, dir_pacer.cap, dir_pacer.one_broker)
    from reassign_cli.core import stored_plan as sp
    from reassign_cli.ops import stored
    from reassign_cli.ops.step import take_watching

    with step_env(backend) as env:
        sizes = None if batches else stored.move_sizes(backend, pacer.sizer, req.data)
        keeper = stored.keep_paced(
            env.store, req, order, lambda store, run: take_watching(store, run, sp.watch()), schedule, sizes
        )
        if batches:
            req.stored = keeper  # its batches are steps of the stored plan (ops/stored_foreground.py)
            keeper.env = env
        else:  # the window steps the stored plan (ops/step.py), holding the lease
            pacer.stored, pacer.env, pacer.lease = keeper, env, keeper.run
        if dirs:  # its log-dir moves, after the last batch or the window, marked in it too
            dir_pacer.stored = keeper
        try:
            yield
        finally:
            keeper.forget()
