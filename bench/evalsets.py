"""The recall evaluation sets, each split once into dev (tune here) and test (report here).

- memdaily: MemDaily (../shared/bench/memdaily), all six question kinds. Every message of a trajectory is a
  memory of that trajectory's store; each question is asked against it.
- dialogue: the same questions turned into a 3–8 turn chat (bench-generated, seeded): the topic is stated
  early, assistant turns come in between (some of them quoting an unrelated memory of the store, which a
  query built from the assistant's words would follow), and the last turn is often a fragment
  ("你还记得吗？") or the second half of the question. A third of the chats ask the whole question last,
  after unrelated small talk: context must not hurt then.
- longchat: English long chats (bench/data/longchat_en_*.json, written for this bench by writers who never
  saw the code): each person's ~200 messages to their companion over six months, filler and moods among
  the facts, with distractors that differ in one detail, and 50 later questions each — direct, paraphrased,
  temporal, updated facts (only the latest message is gold), two-message ones, and fragments after context.
- companion: hand-written companion stores (bench/data/companion_set*.json: each file one Chinese and one
  English person's memories, prompts that paraphrase, fragments with context, moods, and prompts that
  concern no stored memory).

- paraphrase: short Chinese questions (bench/data/paraphrase_zh*.json, written blind to the code: sixteen
  people of different lives, 40 memories and 30 questions each, the second eight by two more writers) that
  ask about one stored fact in other words ("有什么水果是我碰不得的？" for an allergy to mango).
- multisession: English conversations between two people over twenty-odd dated sessions
  (bench/data/multisession_en_*.json, written blind to the code), every turn a memory; factual, temporal,
  multi-hop and updated-fact questions whose gold are the turns holding the evidence.
- hook: companion chats (bench/data/hook_dialogues_*.json, written blind to the code: people of different
  lives — daily life, a child, a couple, an old woman, a student —, Chinese and English), every turn of the
  person a case with the dialogue before it, gold the memory the companion's best reply recalls (or none).
  Recall reads its turns that need a memory (the topic moves from turn to turn, as in a real chat: the
  earlier turns often point at another memory); bench/inject_threshold.py reads every turn. Split by dialogue.

The split is by trajectory (MemDaily, dialogue) or by prompt (companion, longchat), from a hash of its key, so it
never changes when code or data order changes. Tuning reads only `split == "dev"`.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MEMDAILY = HERE.parents[1] / "shared" / "bench" / "memdaily"
COMPANION_FILES = (HERE / "data" / "companion_set.json", HERE / "data" / "companion_set2.json")
LONGCHAT_FILES = tuple(sorted((HERE / "data").glob("longchat_en_*.json")))
PARAPHRASE_FILES = tuple(sorted((HERE / "data").glob("paraphrase_zh*.json")))
MULTISESSION_FILES = tuple(sorted((HERE / "data").glob("multisession_en_*.json")))
HOOK_FILES = tuple(sorted((HERE / "data").glob("hook_dialogues_*.json")))


@dataclass
class Case:
    set: str
    kind: str
    split: str
    store: str  # key into the set's stores
    query: str  # what the person says now
    context: list[dict] = field(default_factory=list)  # earlier turns, oldest first: {"role", "text"}
    gold: frozenset[str] = frozenset()
    key: str = ""


@dataclass
class EvalSet:
    name: str
    stores: dict[str, list[tuple[str, str]]]  # store key → [(memory id, text)]
    cases: list[Case]

    def split(self, which: str) -> list[Case]:
        return [c for c in self.cases if c.split == which]


def split_of(key: str) -> str:
    return "dev" if int(hashlib.sha1(key.encode()).hexdigest(), 16) % 2 == 0 else "test"


def _kind(filename: str) -> str:
    return filename.split("_", 1)[1].rsplit("_", 1)[0]  # 01_simple_events.json → simple


def memdaily(data: Path = MEMDAILY) -> EvalSet:
    stores, cases = {}, []
    for f in sorted(data.glob("*.json")):
        for traj in json.loads(f.read_text(encoding="utf-8")):
            key = f"{f.name}:{traj['tid']}"
            stores[key] = [(str(m["mid"]), m["message"]) for m in traj["message_list"]]
            for q in traj["question_list"]:
                cases.append(Case("memdaily", _kind(f.name), split_of(key), key, q["question"],
                                  gold=frozenset(str(x) for x in q["target_step_id"]),
                                  key=f"{key}:{q['qid']}"))
    return EvalSet("memdaily", stores, cases)


LEADS = ("", "我突然想起来，", "问你个事，", "诶，", "跟你说，我在想", "对了对了，", "我想问问，")
FILLERS = ("等我一下，我去倒杯水", "今天好累啊", "刚刚老板又找我了", "你在吗", "嗯嗯", "哈哈哈好吧", "外面下雨了",
           "我先吃口饭", "刚才手机没电了", "唉，这周过得好快", "先别急", "我刚回到家")
FRAGMENTS = ("你还记得吗？", "所以是哪个来着？", "答案是啥来着？", "你帮我想想", "就刚才那个问题", "想起来没？",
             "那个到底是什么来着", "嗯，就是这个，你记得吗", "你说呢？", "是哪个呀")
REPLIES = ("嗯，我想想。", "你是说哪一个？", "好呀，你慢慢说。", "哈哈，怎么突然问这个", "我在呢。", "好的，我听着。",
           "嗯嗯，然后呢？", "辛苦啦，先歇会儿。")
CONNECTORS = ("那", "对了，", "我是想问，", "就是", "")


def _split_question(q: str) -> tuple[str, str] | None:
    """A question cut where its subject ends: before the last "，" or the last "的" in its second half."""
    for mark in ("，", "的"):
        at = q.rfind(mark)
        if len(q) // 3 <= at < len(q) - 3:
            return q[: at + (1 if mark == "的" else 0)], q[at + 1:]
    return None


def dialogue(md: EvalSet | None = None, seed: int = 7) -> EvalSet:
    md = md or memdaily()
    cases = []
    for c in md.cases:
        rng = random.Random(f"{seed}:{c.key}")
        others = [text for mid, text in md.stores[c.store] if mid not in c.gold]
        turns: list[dict] = []

        def reply() -> None:
            if others and rng.random() < 0.4:  # the assistant brings up something else the store holds
                turns.append({"role": "assistant", "text": f"我记得你说过：{rng.choice(others)}"})
            else:
                turns.append({"role": "assistant", "text": rng.choice(REPLIES)})

        def small_talk(n: int) -> None:
            for _ in range(n):
                turns.append({"role": "user", "text": rng.choice(FILLERS)})
                reply()

        form = rng.choices(("fragment", "split", "plain"), weights=(45, 25, 30))[0]
        halves = _split_question(c.query) if form == "split" else None
        if form == "split" and halves is None:
            form = "fragment"
        if form == "plain":
            small_talk(rng.randint(1, 3))
            query = c.query
        elif form == "split":
            turns.append({"role": "user", "text": f"{rng.choice(LEADS)}说到{halves[0]}……"})
            reply()
            small_talk(rng.randint(0, 2))
            query = rng.choice(CONNECTORS) + halves[1]
        else:
            turns.append({"role": "user", "text": rng.choice(LEADS) + c.query})
            reply()
            small_talk(rng.randint(0, 2))
            query = rng.choice(FRAGMENTS)
        cases.append(Case("dialogue", form, c.split, c.store, query, turns, c.gold, c.key))
    return EvalSet("dialogue", md.stores, cases)


def companion(paths: tuple[Path, ...] = COMPANION_FILES) -> EvalSet:
    """Every companion file present; each file's Chinese and English memories are two stores (two people)."""
    stores: dict[str, list[tuple[str, str]]] = {}
    cases = []
    for path in paths:
        if not path.exists():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        for m in data["memories"]:
            stores.setdefault(f"{path.stem}:{m['lang']}", []).append((m["id"], m["content"]))
        cases += [Case("companion", p["kind"], split_of(p["id"]), f"{path.stem}:{p['lang']}", p["text"],
                       [{"role": "user", "text": t} for t in p.get("context") or []], frozenset(p["gold"]),
                       p["id"])
                  for p in data["prompts"]]
    return EvalSet("companion", stores, cases)


def longchat(paths: tuple[Path, ...] = LONGCHAT_FILES) -> EvalSet:
    """Every long-chat file; each trajectory is one person's store of the messages they sent."""
    stores: dict[str, list[tuple[str, str]]] = {}
    cases = []
    for path in paths:
        for traj in json.loads(path.read_text(encoding="utf-8"))["trajectories"]:
            key = f"{path.stem}:{traj['tid']}"
            stores[key] = [(str(m["mid"]), m["text"]) for m in traj["messages"]]
            cases += [Case("longchat", q["kind"], split_of(q["qid"]), key, q["text"],
                           [{"role": "user", "text": t} for t in q.get("context") or []],
                           frozenset(str(g) for g in q["gold"]), q["qid"])
                      for q in traj["questions"]]
    return EvalSet("longchat", stores, cases)


def paraphrase(paths: tuple[Path, ...] = PARAPHRASE_FILES) -> EvalSet:
    """Short Chinese questions that each paraphrase one stored fact with few shared words; one store a person."""
    stores: dict[str, list[tuple[str, str]]] = {}
    cases = []
    for path in paths:
        for person in json.loads(path.read_text(encoding="utf-8"))["people"]:
            key = f"{path.stem}:{person['pid']}"
            stores[key] = [(m["id"], m["content"]) for m in person["memories"]]
            cases += [Case("paraphrase", "paraphrase", split_of(q["qid"]), key, q["text"],
                           gold=frozenset(q["gold"]), key=q["qid"])
                      for q in person["questions"]]
    return EvalSet("paraphrase", stores, cases)


def multisession(paths: tuple[Path, ...] = MULTISESSION_FILES) -> EvalSet:
    """English two-speaker conversations over dated sessions: every turn is a memory ("speaker: text", as a
    chat log kept turn by turn would be; its date is the session's), questions factual, temporal, multi-hop
    and updated facts."""
    stores: dict[str, list[tuple[str, str]]] = {}
    cases = []
    for path in paths:
        for conv in json.loads(path.read_text(encoding="utf-8"))["conversations"]:
            key = f"{path.stem}:{conv['cid']}"
            stores[key] = [(t["tid"], f"{t['speaker']}: {t['text']}")
                           for s in conv["sessions"] for t in s["turns"]]
            cases += [Case("multisession", q["kind"], split_of(q["qid"]), key, q["text"],
                           gold=frozenset(q["gold"]), key=q["qid"])
                      for q in conv["questions"]]
    return EvalSet("multisession", stores, cases)


def hook(paths: tuple[Path, ...] = HOOK_FILES) -> EvalSet:
    """Companion chats turn by turn, as the per-turn hook sees them: each of the person's turns is a case
    (the turn, with the dialogue before it as context) whose gold is the stored memory the companion's best
    reply would recall, or none. One store a person; the people's lives differ, so a turn of one is about
    nothing in another's store (bench/inject_threshold.py pairs them)."""
    stores: dict[str, list[tuple[str, str]]] = {}
    cases = []
    for path in paths:
        for person in json.loads(path.read_text(encoding="utf-8"))["people"]:
            key = f"{path.stem}:{person['pid']}"
            stores[key] = [(m["id"], m["content"]) for m in person["memories"]]
            for d in person["dialogues"]:
                before: list[dict] = []
                for i, turn in enumerate(d["turns"]):
                    if turn["role"] == "user":
                        cases.append(Case("hook", f"{person['lang']}:{'related' if turn['gold'] else 'none'}",
                                          split_of(d["did"]), key, turn["text"], list(before),
                                          frozenset(turn["gold"]), f"{d['did']}:{i}"))
                    before.append({"role": turn["role"], "text": turn["text"]})
    return EvalSet("hook", stores, cases)


SETS = ("memdaily", "dialogue", "companion", "longchat", "paraphrase", "multisession", "hook")


def load(names: tuple[str, ...] = SETS) -> dict[str, EvalSet]:
    out: dict[str, EvalSet] = {}
    md = memdaily()
    for name in names:
        if name == "memdaily":
            out[name] = md
        elif name == "dialogue":
            out[name] = dialogue(md)
        elif name == "companion" and any(p.exists() for p in COMPANION_FILES):
            out[name] = companion()
        elif name == "longchat" and LONGCHAT_FILES:
            out[name] = longchat()
        elif name == "paraphrase" and PARAPHRASE_FILES:
            out[name] = paraphrase()
        elif name == "multisession" and MULTISESSION_FILES:
            out[name] = multisession()
        elif name == "hook" and HOOK_FILES:
            out[name] = hook()
    return out
