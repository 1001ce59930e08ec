"""A long differential-fuzzing campaign: count every program, keep going past failures.

``pytest tests/test_fuzz.py`` stops at the first failure and shrinks it (minutes: every
step recompiles). A campaign wants the opposite: many programs, each failure recorded
with its source, no shrinking, and a count of what ran. This runs the same generator and
the same comparison (tests/fuzz_programs.py) and appends one JSON line per program::

    python tools/fuzz_campaign.py --examples 500 --seed 7 --log campaign.jsonl
    python tools/fuzz_campaign.py --summary campaign.jsonl

Run several seeds (one process each, a few hundred programs per process keeps memory
flat) to cover more; docs/semantics.md ("Differential fuzzing") gives the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def run(examples: int, seed: int | None, log: Path) -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    from fuzz_programs import Program, programs, run_program

    count = 0

    @settings(
        max_examples=examples,
        derandomize=seed is None,  # CI's programs (tests/test_fuzz.py draws them derandomized)
        phases=[Phase.generate],  # no shrinking: a failure is logged as drawn
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(prog=programs())
    def campaign(prog: Program) -> None:
        nonlocal count
        count += 1
        start = time.perf_counter()
        record = {"seed": seed, "n": count, "grad": prog.grad, "lowp": prog.lowp, "ok": True}
        try:
            run_program(prog)
        except Exception as e:  # noqa: BLE001 (every failure is the record's content)
            record.update(ok=False, error=f"{type(e).__name__}: {e}"[:2000], trace=traceback.format_exc()[-3000:])
            record["source"] = prog.to_source()
        record["seconds"] = round(time.perf_counter() - start, 3)
        with log.open("a") as f:
            f.write(json.dumps(record) + "\n")

    (campaign if seed is None else hypothesis_seed(seed)(campaign))()


def summary(logs: list[Path]) -> None:
    records = [json.loads(line) for log in logs for line in log.read_text().splitlines() if line.strip()]
    failed = [r for r in records if not r["ok"]]
    seeds = sorted({r["seed"] if r["seed"] is not None else -1 for r in records})
    print(
        f"{len(records)} programs ({sum(r['grad'] for r in records)} with gradients, "
        f"{sum(r['lowp'] for r in records)} with bfloat16/float16 parts), seeds {seeds[0]}..{seeds[-1]} "
        f"({len(seeds)} seeds), {len(failed)} failed, {sum(r['seconds'] for r in records) / 3600:.2f} h compiling"
        if records
        else "no programs"
    )
    for r in failed:
        print(f"\n--- seed {r['seed']} program {r['n']}: {r['error'].splitlines()[0][:300]}\n{r['source']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--seed", type=int, help="default: the derandomized programs CI runs")
    parser.add_argument("--log", type=Path, default=Path("fuzz_campaign.jsonl"))
    parser.add_argument("--summary", type=Path, nargs="*", help="summarize these logs instead of running")
    args = parser.parse_args()
    if args.summary is not None:
        summary(args.summary or [args.log])
    else:
        run(args.examples, args.seed, args.log)


if __name__ == "__main__":
    main()
