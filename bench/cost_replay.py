"""Replay a long companion chat against Anthropic's prompt-cache billing.

The chat is generated (fixed seed): hundreds of person turns over about ten days, Chinese-sized messages,
tool calls with long output on some turns, and idle gaps from seconds to a night. Each request is the
prefix tools → system → messages; the cache holds the previous request's prefix for 5 minutes (refreshed
by a hit), a request reads the longest prefix it shares with the cached one and writes the rest
(Claude Code marks the end of the last message), and billing uses the prices below. Context that reaches
Claude Code's auto-compact point (≈167k of 200k) is compacted in every scenario that lets it get there.

Scenarios:
  naive            recalled cards in the system prompt (the seed's tripled bill)
  dual-zone        cards in the current user turn, kept in the transcript as hook context is
  dual-zone gw     cards added by `ombre gateway`: present in the current turn, absent afterwards
  … + diet/forge   the keeper's thresholds: diet at 55 %, forge (retain 60k) at 70 %, only when idle ≥ 180 s

    python bench/cost_replay.py [--turns 400] [--seed 7]
"""
from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field

PRICE_INPUT = 3.00  # $ per million tokens (Claude Sonnet)
PRICE_OUTPUT = 15.00
CACHE_WRITE = {300: 1.25, 3600: 2.0}  # × input price, by cache lifetime: 5 minutes (default) or 1 hour
CACHE_READ = 0.10
WINDOW = 200_000
COMPACT_AT = 167_000
TOOLS_TOKENS, SYSTEM_TOKENS, PERSONA_TOKENS = 14_000, 3_000, 2_500
CARD_TOKENS = (300, 1_800)  # the block's size on a turn that has one, inside the 1,800 budget
NO_CARDS = 0.4  # share of turns with nothing close enough to show (small talk, greetings, follow-ups)
DIET_PCT, FORGE_PCT, IDLE_S = 55, 70, 180
DIET_COOLDOWN_S, FORGE_COOLDOWN_S = 45 * 60, 90 * 60
SQUASH_OVER, SQUASHED, RETAIN, HANDOFF = 2_000, 60, 60_000, 800


@dataclass
class Turn:
    gap_s: int  # idle time before the person's message
    user: int
    cards: int
    rounds: list[tuple[int, int]]  # tool rounds: (tool_use tokens, tool_result tokens)
    reply: int


def generate(turns: int, seed: int, cold: float = 0.30) -> list[Turn]:
    """`cold`: the share of turns that come after more than 5 minutes of silence (a quarter of those
    after a night), when every scenario finds the cache expired."""
    rng = random.Random(seed)
    out = []
    for _ in range(turns):
        r = rng.random()
        gap = (rng.randint(10, 240) if r >= cold else rng.randint(300, 3600) if r >= cold / 4
               else rng.randint(3 * 3600, 10 * 3600))
        rounds = []
        if rng.random() < 0.2:  # looks something up, reads a file, runs a command
            rounds = [(rng.randint(40, 150), int(rng.lognormvariate(7.3, 1.0))) for _ in range(rng.randint(1, 3))]
        cards = 0 if rng.random() < NO_CARDS else rng.randint(*CARD_TOKENS)
        out.append(Turn(gap, int(rng.randint(8, 120) * 1.3), cards, rounds,
                        int(rng.randint(30, 260) * 1.3)))
    return out


@dataclass
class Bill:
    uncached: int = 0
    write: int = 0
    read: int = 0
    output: int = 0
    requests: int = 0
    compactions: int = 0
    diets: int = 0
    forges: int = 0
    per_turn: list[tuple[int, int, int]] = field(default_factory=list)  # (turn, read, write) of its first request
    ttl_s: int = 300

    @property
    def dollars(self) -> float:
        return (self.uncached * PRICE_INPUT + self.write * PRICE_INPUT * CACHE_WRITE[self.ttl_s]
                + self.read * PRICE_INPUT * CACHE_READ + self.output * PRICE_OUTPUT) / 1e6


def _common(a: list, b: list) -> int:
    n = 0
    for x, y in zip(a, b):
        if x[0] != y[0]:
            break
        n += x[1]
    return n


def replay(chat: list[Turn], mode: str, keeper: bool, ttl_s: int = 300) -> Bill:
    bill = Bill(ttl_s=ttl_s)
    history: list[tuple[tuple, int]] = [(("persona",), PERSONA_TOKENS)]  # CLAUDE.md rides the first message
    cached: list = []
    cache_until = -1.0
    clock = 0.0
    last_diet = last_forge = -1e9
    swaps = 0

    def request(prefix: list, new_out: int, turn_no: int, first: bool) -> None:
        nonlocal cached, cache_until
        total = sum(t for _, t in prefix)
        hit = _common(prefix, cached) if clock <= cache_until else 0
        bill.read += hit
        bill.write += total - hit
        bill.output += new_out
        bill.requests += 1
        if first:
            bill.per_turn.append((turn_no, hit, total - hit))
        cached, cache_until = prefix, clock + ttl_s

    for n, turn in enumerate(chat):
        clock += turn.gap_s
        system = [(("tools",), TOOLS_TOKENS),
                  ((("system", n) if mode == "naive" else ("system",)), SYSTEM_TOKENS + (turn.cards if mode == "naive" else 0))]
        context = sum(t for _, t in system) + sum(t for _, t in history)
        if keeper and turn.gap_s >= IDLE_S:
            pct = 100 * context / WINDOW
            if pct >= FORGE_PCT and clock - last_forge >= FORGE_COOLDOWN_S:
                kept, size = [], 0
                for block in reversed(history):
                    if size + block[1] > RETAIN:
                        break
                    kept.append(block)
                    size += block[1]
                swaps += 1
                history = [(("persona", swaps), PERSONA_TOKENS), (("handoff", swaps), HANDOFF)] + kept[::-1]
                last_forge = clock
                bill.forges += 1
            elif pct >= DIET_PCT and clock - last_diet >= DIET_COOLDOWN_S:
                history = [((("squashed",) + b[0]), SQUASHED) if b[0][0] == "result" and b[1] > SQUASH_OVER else b
                           for b in history]
                last_diet = clock
                bill.diets += 1
        if context >= COMPACT_AT:  # Claude Code compacts: one summarising request, then a summary
            request(system + history, 4_000, n, False)
            swaps += 1
            history = [(("persona", swaps), PERSONA_TOKENS), (("summary", swaps), 4_000)]
            bill.compactions += 1
        if mode == "naive":
            user = [(("user", n), turn.user)]
        elif mode == "dual":
            user = [(("user+cards", n), turn.user + turn.cards)]
        else:  # gateway: the block is in this turn's requests only
            user = [(("user+cards", n), turn.user + turn.cards)]
        history += user
        first = True
        for use, result in turn.rounds:
            request(system + history, use, n, first)
            first = False
            clock += 5
            history += [(("use", n, len(history)), use), (("result", n, len(history)), result)]
        request(system + history, turn.reply, n, first)
        if mode == "gateway":  # the next request re-sends the person's words without the block
            i = history.index(user[0])
            history[i] = (("user", n), turn.user)
        history.append((("reply", n), turn.reply))
    return bill


def _ratio(args: argparse.Namespace, cold: float) -> float:
    chat = generate(args.turns, args.seed, cold)
    return replay(chat, "dual", True).dollars / replay(chat, "naive", False).dollars


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cold", type=float, default=0.30, help="share of turns after > 5 idle minutes")
    args = ap.parse_args()
    chat = generate(args.turns, args.seed, args.cold)
    days = sum(t.gap_s for t in chat) / 86400
    tools = sum(len(t.rounds) for t in chat)
    print(f"replay: {len(chat)} person turns over {days:.1f} days, {args.cold:.0%} of them after > 5 idle minutes, "
          f"{tools} tool calls, "
          f"cards on {1 - NO_CARDS:.0%} of turns, {CARD_TOKENS[0]}–{CARD_TOKENS[1]} tokens; Sonnet prices")
    scenarios = (("naive (cards in system)", "naive", False), ("naive + diet/forge", "naive", True),
                 ("dual-zone (hook)", "dual", False), ("dual-zone (hook) + diet/forge", "dual", True),
                 ("dual-zone (gateway) + diet/forge", "gateway", True))
    runs = {}
    for ttl, cache in ((300, "5-minute cache"), (3600, "1-hour cache (ENABLE_PROMPT_CACHING_1H=1)")):
        runs[ttl] = {label: replay(chat, mode, keeper, ttl) for label, mode, keeper in scenarios}
        base = runs[ttl]["naive (cards in system)"].dollars
        print(f"\n{cache}")
        print(f"{'scenario':<34}{'cache read':>12}{'cache write':>12}{'output':>10}{'$':>9}{'vs naive':>9}"
              f"{'compact':>8}{'diet':>6}{'forge':>6}")
        for label, b in runs[ttl].items():
            print(f"{label:<34}{b.read / 1e6:>11.1f}M{b.write / 1e6:>11.1f}M{b.output / 1e6:>9.2f}M"
                  f"{b.dollars:>9.2f}{b.dollars / base:>8.0%}{b.compactions:>8}{b.diets:>6}{b.forges:>6}")
    runs = runs[300]
    print("\nthe same chat shape with more or fewer turns after > 5 idle minutes (5-minute cache, dual-zone hook "
          "+ diet/forge vs naive):")
    print("  " + "  ".join(f"{c:.0%} cold → {_ratio(args, c):.0%}" for c in (0.1, 0.2, 0.3, 0.4)))
    print("\nper turn (5-minute cache; first request of each person turn), turns 100–109: tokens read from cache / "
          "written")
    naive, dual = runs["naive (cards in system)"], runs["dual-zone (hook) + diet/forge"]
    print(f"{'turn':>5} {'gap':>7} {'naive read':>11} {'naive write':>12} {'dual read':>10} {'dual write':>11}")
    for (n, nr, nw), (_, dr, dw) in list(zip(naive.per_turn, dual.per_turn))[100:110]:
        print(f"{n:>5} {chat[n].gap_s:>6}s {nr:>11,} {nw:>12,} {dr:>10,} {dw:>11,}")


if __name__ == "__main__":
    main()
