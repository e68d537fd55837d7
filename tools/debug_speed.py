"""The debugger's two speed figures (issue 28), on a loop of ~10^6 instructions.

Usage: python -m tools.debug_speed [--rounds N] [--passes P] [--topology NAME]

  rate     instructions / s of the plain run's loop (neuronemu.run, Result.wall_seconds: the
           loop alone, no set-up or report), against the debugger's `continue` to a breakpoint
           on the line after the loop (wall time of the whole command: loop calls, checkpoint
           copies, chunk driver). Issue 28: the debugger keeps >= 80%.
  reverse  seconds of one `reverse-step` at the breakpoint (~10^6 instructions into the run):
           restore the last checkpoint, replay to the step before. Issue 28: <= 1 s.

With ``--topology`` the loop runs on every rank of that topology (the plain run: run_spmd, the
loops' own wall time summed over the ranks; the debugger: every rank, the breakpoint on the last
rank, which the driver runs last) and the reverse step is the last rank's.

The two runs alternate (plain, debugger, plain, ...) so that load on the machine hits both
alike; medians and the spread (min-max) of the rounds are printed."""

from __future__ import annotations

import argparse
import statistics
import time

import neuronemu
from neuronemu.debug.expr import Text
from neuronemu.debug.session import Debugger

KERNEL = """\
.sbuf t float32[128, 64]
.hbm out float32[128, 64] output
    vector.memset t, value=0.0
    ctrl.mov r0, 0
top:
    vector.tensor_scalar t, t, op0=add, operand0=1.0
    ctrl.add r0, r0, 1
    ctrl.blt r0, {passes}, top
    dma.copy out, t, queue=0
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--passes", type=int, default=333_333)
    parser.add_argument("--topology", default=None)
    args = parser.parse_args()
    program = neuronemu.assemble(KERNEL.format(passes=args.passes), "loop.s")
    run = plain_run(program, args.topology)
    run()   # warm: compile / load everything once
    plain, debugged, reverse = [], [], []
    for _ in range(args.rounds):
        steps, loop_seconds, last_steps = run()
        plain.append(steps / loop_seconds)
        d = Debugger(program, topology=args.topology)
        last = d.machine.world - 1
        d.break_at(Text(f"9 rank {last}" if last else "9"))
        start = time.perf_counter()
        d.cont()
        seconds = time.perf_counter() - start
        assert d.pc == len(program.instrs) - 1 and d.machine.focus == last
        ran = sum(c.steps for c in d.machine.cores) if last else d.steps
        debugged.append(ran / seconds)
        for _ in range(3):
            start = time.perf_counter()
            d.reverse_step()
            reverse.append(time.perf_counter() - start)
        assert d.steps == last_steps - 4
    where = f" on the {d.machine.world} ranks of {args.topology}" if args.topology else ""
    print(f"{steps} instructions per run{where}, {args.rounds} rounds (plain, debugger "
          f"alternating)")
    for name, values, unit in (("plain loop", plain, "M instr/s"),
                               ("debug continue", debugged, "M instr/s")):
        print(f"  {name:<15} median {statistics.median(values) / 1e6:.3f} {unit}  "
              f"(min {min(values) / 1e6:.3f}, max {max(values) / 1e6:.3f})")
    ratios = [b / a for a, b in zip(plain, debugged)]
    print(f"  ratio debugger / plain: median {statistics.median(ratios):.1%} "
          f"(per round: {', '.join(f'{r:.0%}' for r in ratios)})")
    print(f"  reverse-step at step ~{last_steps}: median {statistics.median(reverse):.3f} s "
          f"(min {min(reverse):.3f}, max {max(reverse):.3f}, {len(reverse)} steps)")


def plain_run(program, topology):
    """A function running the plain run: (instructions, the loops' seconds, the last rank's
    instructions)."""
    def one_core():
        result = neuronemu.run(program)
        return result.steps, result.wall_seconds, result.steps

    def ranks():
        from neuronemu import api

        result = api.run_spmd(program, topology)
        return (sum(r.steps for r in result.ranks), sum(r.wall_seconds for r in result.ranks),
                result.ranks[-1].steps)

    return ranks if topology else one_core


if __name__ == "__main__":
    main()
