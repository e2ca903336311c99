"""The store protocol on both backends: the embedded SQLite file and PostgreSQL + pgvector, the
latter a real PostgreSQL 16 started by the `pgserver` package (no server to set up by hand). The same
calls give the same answers; the memory service runs unchanged on either."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ombre.app import open_service, open_store
from ombre.clock import iso, now_utc
from ombre.memory.hold import HoldRequest
from ombre.memory.model import Memory
from ombre.memory.segment import document, query_terms
from ombre.memory.store import GateEntry
from ombre.settings import Settings
from tests.conftest import fresh_database


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request, tmp_path: Path) -> Settings:
    env = {"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_VECTORS": "0"}
    if request.param == "postgresql":
        env["OMBRE_DB"] = fresh_database(request.getfixturevalue("postgres"))
    return Settings.from_env(env)


@pytest.fixture
def store(settings):
    s = open_store(settings)
    yield s
    s.close()


def memory(mid: str, content: str, **kw) -> Memory:
    stamp = kw.pop("created", iso(now_utc()))
    return Memory(
        id=mid, content=content, type=kw.pop("type", "事件"), created=stamp, last_active=stamp, status="confirmed", **kw
    )


CORPUS = [
    "她最喜欢桂花乌龙，少糖",
    "她养了一只叫年糕的橘猫",
    "每周三晚上八点语音",
    "她对花生过敏，千万别推荐花生",
    "她妹妹的生日是12月6日",
    "周末一起去爬山",
    "她喜欢下雨天在家看书",
    "她讨厌香菜",
]


def test_writes_and_reads_round_trip(store):
    for i, text in enumerate(CORPUS):
        store.add(memory(f"m{i}", text, importance=5 + i % 5, pinned=i == 1), document(text))
    assert store.count() == len(CORPUS) and store.count(pinned=True) == 1
    got = store.get("m3")
    assert got.content == CORPUS[3] and got.importance == 8 and not got.archived
    assert set(store.get_many(["m0", "m5", "nope"])) == {"m0", "m5"}
    got.archived = True
    store.update(got)
    assert store.get("m3").archived and len(store.list()) == len(CORPUS) - 1
    assert [m.id for m in store.list(archived=True)] == ["m3"]
    store.touch(["m0", "m0"], "2099-01-01T00:00:00+00:00")
    assert store.get("m0").activation_count == 2
    assert store.least_active(pinned=None).id != "m0"
    store.delete("m5")
    assert store.get("m5") is None and store.count() == len(CORPUS) - 2  # count() leaves out the archived
    store.log_gate(GateEntry("2026-12-04T00:00:00+00:00", "2026-12-04", "auto", "store", ["理由"], "内容", "m0"))
    assert store.gate_count("2026-12-04", "auto", ("store",)) == 1 and store.gate_log(5)[0].reasons == ["理由"]
    store.set_meta("k", "v")
    store.set_meta("k", "w")
    assert store.meta("k") == "w" and store.meta("missing") is None


def test_a_recall_counted_on_postgresql_leaves_the_memorys_row_alone(postgres):
    """A memory's row holds its vectors and fills half a page: rewriting it for each recall's count wrote a
    new version with new HNSW entries. Counts go to memory_use; reads add them in; a write of the memory
    takes them back into its row."""
    import psycopg

    from ombre.memory.postgres_store import PostgresStore

    url = fresh_database(postgres)
    store = PostgresStore(url)
    try:
        store.add(memory("m0", "她最喜欢桂花乌龙"), document("她最喜欢桂花乌龙"))
        store.add(memory("m1", "他在学大提琴"), document("他在学大提琴"))
        with psycopg.connect(url) as db:
            before = db.execute("SELECT id, xmin::text FROM memories ORDER BY id").fetchall()
        store.touch(["m0", "m0", "m1"], "2099-01-01T00:00:00+00:00")
        store.touch(["m0"], "2099-01-02T00:00:00+00:00")
        with psycopg.connect(url) as db:
            assert db.execute("SELECT id, xmin::text FROM memories ORDER BY id").fetchall() == before
        m0 = store.get("m0")
        assert (m0.activation_count, m0.last_active) == (3, "2099-01-02T00:00:00+00:00")
        assert store.least_active().id == "m1" and store.get_many(["m1"])["m1"].activation_count == 1
        m0.content = "她最喜欢桂花乌龙，少糖"
        store.update(m0)
        store.touch(["m0"], "2099-01-03T00:00:00+00:00")
        assert store.get("m0").activation_count == 4  # 3 taken into the row, one counted since
        store.delete("m1")
        with psycopg.connect(url) as db:
            assert db.execute("SELECT id, activation_count FROM memory_use ORDER BY id").fetchall() == [("m0", 1)]
    finally:
        store.close()


def test_keyword_search_ranks_alike_on_both_backends(store):
    for i, text in enumerate(CORPUS):
        store.add(memory(f"m{i}", text), document(text))
    assert store.keyword_search(query_terms("她喝什么茶？桂花乌龙"), 5)[0][0] == "m0"
    assert store.keyword_search(query_terms("年糕最近还好吗"), 5)[0][0] == "m1"
    assert store.keyword_search(query_terms("花生"), 5)[0][0] == "m3"
    assert store.keyword_search(query_terms("quantum physics"), 5) == []
    text = "她最喜欢茉莉奶绿"
    changed = store.get("m0")
    changed.content = text
    store.update(changed, document(text))
    assert all(mid != "m0" for mid, _ in store.keyword_search(query_terms("桂花乌龙"), 5))
    assert store.keyword_search(query_terms("茉莉奶绿"), 5)[0][0] == "m0"


def latents(*pairs: tuple[int, float]):
    return np.array([i for i, _ in pairs], dtype=np.int32), np.array([w for _, w in pairs], dtype=np.float32)


def test_latent_terms_rank_by_their_products_on_both_backends(store, settings):
    """A memory's latent terms are postings; a search sums weight × the query's weight, best first, never an
    archived or deleted memory, and the memories still to do are the ones without their marker."""
    for i, text in enumerate(ENGLISH):
        store.add(memory(f"e{i}", text), document(text))
    assert {m.id for m in store.without_latents(10)} == {"e0", "e1", "e2", "e3"} and store.latents_pending() == 4
    store.set_latents(
        [
            ("e0", latents((7, 1.0), (9, 0.5))),
            ("e1", latents((7, 0.2), (3, 2.0))),
            ("e2", latents((5, 1.0))),
            ("e3", latents()),
        ]
    )
    assert store.latents_pending() == 0 and store.without_latents(10) == []  # e3 has none, and is done
    found = store.latent_search(latents((7, 2.0), (3, 0.5)), 10)
    assert found == [("e0", pytest.approx(2.0)), ("e1", pytest.approx(1.4))]  # 2·1 against 2·0.2 + 0.5·2
    store.set_latents([("e1", latents((5, 0.1)))])  # replaced, not added to
    assert [mid for mid, _ in store.latent_search(latents((7, 2.0), (3, 0.5)), 10)] == ["e0"]
    archived = store.get("e0")
    archived.archived = True
    store.update(archived)
    assert store.latent_search(latents((7, 2.0)), 10) == []
    store.delete("e2")
    assert store.latent_search(latents((5, 1.0)), 10) == [("e1", pytest.approx(0.1))]
    assert store.latent_search(latents(), 10) == []
    if not settings.db:  # the file passes the check `ombre serve` and the doctor run on it
        assert store._query("PRAGMA quick_check") == [("ok",)]


ENGLISH = [
    "Ruby has a dairy allergy, no milk or cheese",
    "Kwame started running marathons last spring",
    "Her gran lives in Stockport and bakes every Sunday",
    "The cat keeps stealing hair ties",
]


def test_english_keywords_meet_as_stems_without_function_words(store):
    for i, text in enumerate(ENGLISH):
        store.add(memory(f"e{i}", text), document(text))
    assert store.keyword_search(query_terms("does kwame still run?"), 5)[0][0] == "e1"
    assert store.keyword_search(query_terms("what are her allergies"), 5)[0][0] == "e0"
    # a word joined by a hyphen is found through its parts, and finds them
    assert store.keyword_search(query_terms("dairy-free?"), 5)[0][0] == "e0"
    assert store.keyword_search(query_terms("hair-ties"), 5)[0][0] == "e3"
    assert store.keyword_search(query_terms("grandma baking on sundays"), 5)[0][0] == "e2"
    # a question made only of function words finds nothing, rather than whatever holds "the" and "her"
    assert store.keyword_search(query_terms("what is the thing that she has?"), 5) == []


def test_an_older_store_is_indexed_again_with_stems(settings):
    """The keys changed: a store written before is re-indexed by a migration, on either backend."""
    s = open_store(settings)
    raw = " ".join(w.lower() for w in ENGLISH[1].replace(",", "").split())  # how the words were indexed before
    s.add(memory("old", ENGLISH[1]), (raw, ""))
    assert s.keyword_search(query_terms("running"), 5) == []  # the stem "run" is not in the old index
    s.close()
    if settings.db:
        import psycopg

        with psycopg.connect(settings.db, autocommit=True) as db:
            db.execute("DELETE FROM _migrations WHERE name = 'm003_english_keys'")
    else:
        import sqlite3

        db = sqlite3.connect(settings.memory_db)
        db.execute("DELETE FROM _migrations WHERE name = 'm013_english_keys'")
        db.commit()
        db.close()
    again = open_store(settings)
    try:
        assert again.keyword_search(query_terms("running"), 5)[0][0] == "old"
        assert again.keyword_search(query_terms("marathon"), 5)[0][0] == "old"
    finally:
        again.close()


def test_keyword_scores_are_the_same_numbers_on_both_backends(tmp_path, postgres):
    """PostgreSQL's BM25 is computed in SQL from the postings; it must give FTS5's own scores, also for words FTS5 cuts
    into several tokens (a date, a time, an address), or recall would differ between the backends."""
    from ombre.memory.postgres_store import PostgresStore
    from ombre.memory.sqlite_store import SQLiteStore

    texts = CORPUS + [
        "论坛的时间是2024-04-11 14:00",
        "论坛的规模是八千人",
        "她的邮箱是 ana_li@example.com",
        "硬件创新与发展论坛的持续时间是三天",
        "论坛 v2.5 版本的地址在 3-101 室",
        "Maya's 20-mile run in mid-June",
        "a co-worker's e-mail about the run",
    ]
    lite, pg = SQLiteStore(tmp_path / "a.db"), PostgresStore(fresh_database(postgres))
    try:
        for s in (lite, pg):
            s.add_many([(memory(f"m{i}", t), document(t), None) for i, t in enumerate(texts)])
        for q in (
            "论坛的持续时间是什么",
            "2024-04-11 的论坛",
            "ana_li 的邮箱",
            "3-101 室在哪",
            "桂花乌龙",
            "Maya's co-workers",
            "the 20-mile run in June",
        ):
            a, b = lite.keyword_search(query_terms(q), 10), pg.keyword_search(query_terms(q), 10)
            assert [i for i, _ in a] == [i for i, _ in b], q
            assert np.allclose([x for _, x in a], [x for _, x in b], rtol=1e-9), q
    finally:
        lite.close()
        pg.close()


def test_a_large_store_ranks_keywords_exactly_as_sqlite_does(tmp_path, postgres):
    """In a large store PostgreSQL's search sums the postings of the rarest terms only (MOST_POSTINGS); its
    top results and scores must still be FTS5's, for rare and common queries alike."""
    import random

    from ombre.memory.postgres_store import PostgresStore
    from ombre.memory.sqlite_store import SQLiteStore

    rng = random.Random(3)
    people = ["妈妈", "爸爸", "妹妹", "小林", "阿杰", "外婆", "室友", "老板"]
    # sixty things, two a memory: each in about 3 % of the memories, under the 5 % past which a term is
    # dropped as common, so a query of a few of them matches more memories than any one fetch should read
    things = (
        "桂花乌龙 火锅 爬山 面试 体检 搬家 生日 年糕 花生 考研 跑步 电影 加班 猫粮 周末 周三 早起 失眠 咖啡 雨天 "
        "钢琴 游泳 地铁 高铁 外卖 奶茶 烧烤 羽毛球 瑜伽 读书 追剧 相亲 婚礼 医院 牙医 驾照 雅思 报税 房租 "
        "年假 出差 会议 周报 绩效 跳槽 红包 春节 中秋 端午 国庆 腊八 元宵 清明 重阳 七夕 圣诞 跨年 露营 滑雪"
    ).split()
    texts = []
    for i in range(16_000):
        a, b = rng.choice(people), rng.sample(things, 2)
        texts.append(f"{a}说{b[0]}的事，还有{b[1]}，第{i % 97}回")
    lite, pg = SQLiteStore(tmp_path / "a.db"), PostgresStore(fresh_database(postgres))
    try:
        rows = [(memory(f"m{i:05d}", t), document(t), None) for i, t in enumerate(texts)]
        lite.add_many(rows)
        pg.load({pg.namespace: (rows, [], {})})
        for q in (
            "外婆的雨天",
            "阿杰 花生 猫粮",
            "妈妈周末爬山吗",
            "第42回",
            "桂花乌龙和火锅",
            "老板 加班 失眠 咖啡 早起",
            "钢琴 游泳 地铁 高铁 外卖 奶茶",
        ):
            a, b = lite.keyword_search(query_terms(q), 50), pg.keyword_search(query_terms(q), 50)
            assert np.allclose([x for _, x in a], [x for _, x in b], rtol=1e-9), q
            tied = {round(x, 9) for _, x in a[-1:]}  # the last place may be one of several equal scores
            assert [i for i, x in a if round(x, 9) not in tied] == [i for i, x in b if round(x, 9) not in tied], q
    finally:
        lite.close()
        pg.close()


def test_vectors_are_stored_found_and_follow_archiving(store):
    rng = np.random.default_rng(1)
    for i, text in enumerate(CORPUS[:4]):
        store.add(memory(f"m{i}", text), document(text))
    assert store.has_unembedded("use") and store.unembedded_count("use") == 4
    vectors = {f"m{i}": (v / np.linalg.norm(v)).astype(np.float32) for i, v in enumerate(rng.normal(size=(4, 512)))}
    store.set_vectors("use", list(vectors.items())[:3])
    assert [m.id for m in store.without_vectors("use", 10)] == ["m3"]
    index = store.vectors("use")
    assert sorted(index.ids) == ["m0", "m1", "m2"]
    assert np.allclose(index.matrix[index.positions["m1"]], vectors["m1"], atol=1e-6)
    gone = store.get("m1")
    gone.archived = True
    store.update(gone)
    assert sorted(store.vectors("use").ids) == ["m0", "m2"]  # the cache saw the change


def test_recall_does_not_wait_for_a_hold_in_progress(settings, embedder):
    """A hold keeps the store's hold lock while it may wait seconds on an arbitration model; a breath from
    another thread of the same service answers meanwhile, and a second hold waits its turn."""
    import threading

    from ombre.memory.breath import BreathRequest

    svc = open_service(settings, arbitrate=False, embedder=embedder)
    try:
        svc.hold(HoldRequest(content="她对花生过敏，千万别推荐花生", type="偏好"))
        inside, release, answered = threading.Event(), threading.Event(), {}

        def slow_hold() -> None:
            with svc.store.exclusive():
                inside.set()
                release.wait(30)

        holder = threading.Thread(target=slow_hold)
        holder.start()
        assert inside.wait(10)
        reader = threading.Thread(target=lambda: answered.update(r=svc.breath(BreathRequest(query="花生"))))
        reader.start()
        reader.join(10)
        second_done = threading.Event()
        writer = threading.Thread(
            target=lambda: (svc.hold(HoldRequest(content="她养了一只叫年糕的橘猫", type="事件")), second_done.set())
        )
        writer.start()
        assert not second_done.wait(0.5)  # a second hold waits for the first
        release.set()
        holder.join(10)
        writer.join(30)
        assert "r" in answered and "花生" in answered["r"].render() and second_done.is_set()
    finally:
        release.set()
        svc.close()


def test_dates_and_month_days(store):
    store.add(memory("b", "她妹妹的生日", event_date="2020-12-06"), document("她妹妹的生日"))
    store.add(memory("old", "第一次见面", created="2025-12-05T02:00:00+00:00"), document("第一次见面"))
    assert [m.id for m in store.on_dates(["2020-12-06"])] == ["b"]
    assert {m.id for m in store.on_month_days(["12-06", "12-05"])} == {"b", "old"}
    assert [m.id for m in store.on_month_days(["12-05"], created_before="2025-01-01")] == []


def test_month_days_are_read_again_once_the_namespace_is_written(postgres):
    """PostgreSQL keeps the day's anniversary rows until a write moves the namespace's version: its own write
    shows at once, another service's within the version's TTL."""
    from ombre.memory.postgres_store import VERSION_TTL_S, PostgresStore

    url = fresh_database(postgres)
    mine, other = PostgresStore(url), PostgresStore(url)
    try:
        mine.add(memory("a", "去年今天第一次见面", created="2024-12-07T02:00:00+00:00"), document("第一次见面"))
        assert [m.id for m in mine.on_month_days(["12-07"])] == ["a"]
        other.add(memory("b", "前年今天搬家", created="2023-12-07T02:00:00+00:00"), document("搬家"))
        time.sleep(VERSION_TTL_S + 0.05)
        assert sorted(m.id for m in mine.on_month_days(["12-07"])) == ["a", "b"]
        mine.delete("b")
        assert [m.id for m in mine.on_month_days(["12-07"])] == ["a"]
    finally:
        mine.close()
        other.close()


def test_the_memory_service_runs_unchanged_on_either_backend(settings, embedder):
    from ombre.app import open_service
    from ombre.memory.breath import BreathRequest

    svc = open_service(settings, embedder=embedder)  # arbitration and recall with real e5 vectors
    try:
        old = svc.hold(HoldRequest(content="每周三晚上八点语音", type="承诺", quote="以后每周三晚上八点都语音吧"))
        new = svc.hold(HoldRequest(content="语音改到每周四晚上八点", type="承诺", quote="之后改成周四晚上八点吧"))
        assert new.arbitration["action"] == "overwrite"
        assert svc.get(old.id).superseded_by == new.id
        cards = svc.breath(BreathRequest(query="什么时候语音")).cards
        assert [c.id for c in cards][:1] == [new.id]
        edited = svc.edit(new.id, importance=9)
        assert edited.memory.importance == 9
        svc.forget(old.id)
        assert svc.store.get(old.id) is None
        assert svc.health()["backend"] == ("postgresql" if settings.db else "sqlite")
    finally:
        svc.close()


def test_services_starting_at_once_migrate_a_new_database_once(postgres):
    url = fresh_database(postgres)
    script = (
        "import sys, time; from ombre.memory.postgres_store import PostgresStore; "
        "time.sleep(max(0.0, float(sys.argv[2]) - time.time())); PostgresStore(sys.argv[1]).close()"
    )
    start = time.time() + 2
    procs = [
        subprocess.Popen([sys.executable, "-c", script, url, str(start)], stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    for p in procs:
        assert p.wait(timeout=60) == 0, p.stderr.read()
    import psycopg

    with psycopg.connect(url) as db:
        from ombre.memory.postgres_store import _schema

        assert db.execute("SELECT count(*) FROM _migrations").fetchone()[0] == len(_schema())
        indexes = [r[0] for r in db.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'")]
        assert len(indexes) == len(set(indexes))
        # no HNSW index over every namespace (m004): a namespace gets its own when it is large; keywords are
        # ranked from the postings' primary key (m005), not a GIN index
        assert sum("USING hnsw" in i for i in indexes) == 0 and sum("USING gin" in i for i in indexes) == 0
        assert any("memory_terms_pkey" in i for i in indexes)


def test_a_bad_address_is_a_clear_error(tmp_path):
    from ombre.errors import StoreError, UsageError

    with pytest.raises(UsageError, match="not a PostgreSQL address"):
        Settings.from_env({"HOME": str(tmp_path), "OMBRE_DB": "mysql://x"})
    s = Settings.from_env({"HOME": str(tmp_path), "OMBRE_DB": "postgresql://nobody:pw@127.0.0.1:9/none"})
    with pytest.raises(StoreError, match="cannot open the PostgreSQL memory store") as caught:
        open_store(s)
    assert "pw" not in s.database_label and "OMBRE_DB" in caught.value.hint
    for name, value in (("OMBRE_PG_POOL_MAX", "1"), ("OMBRE_PG_POOL_MIN", "-1"), ("OMBRE_PG_POOL_TIMEOUT_MS", "0")):
        with pytest.raises(UsageError, match=f"{name}={value} is too small"):
            Settings.from_env({"HOME": str(tmp_path), name: value})


def test_migrate_copies_a_sqlite_store_whole_and_leaves_it_untouched(tmp_path, postgres):
    """Memories with both encoders' vectors, traces, archived ones, the gate log and cursors move in one
    transaction; counts and checksums match; the source file is byte-identical; recall answers alike."""
    import hashlib
    import json as js
    import os

    from ombre.memory.breath import BreathRequest, breath
    from ombre.memory.postgres_store import PostgresStore
    from ombre.memory.sqlite_store import SQLiteStore

    rng = np.random.default_rng(7)
    source = SQLiteStore(tmp_path / "ombre" / "ombre.db")
    rows = []
    for i in range(10_000):  # the size
        text = f"{CORPUS[i % len(CORPUS)]}，第{i}次提到"
        m = memory(f"m{i:05d}", text, archived=i % 97 == 0, importance=1 + i % 10)
        m.trace = [
            {"at": "2026-12-01T00:00:00+00:00", "action": "edited", "other": "", "by": "person", "reason": str(i)}
        ]
        vectors = (
            {
                k: (v / np.linalg.norm(v)).astype(np.float32)
                for k, v in (("e5", rng.normal(size=384)), ("use", rng.normal(size=512)))
            }
            if i % 5
            else None
        )
        rows.append((m, document(text), vectors))
    source.add_many(rows)
    source.log_gate(GateEntry("2026-12-04T00:00:00+00:00", "2026-12-04", "auto", "store", ["一"], "内容", "m00001"))
    source.set_meta("distill_cursor:abc", "123")
    source.close()
    before = hashlib.sha256((tmp_path / "ombre" / "ombre.db").read_bytes()).hexdigest()
    url = fresh_database(postgres)
    env = {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre")}
    out = subprocess.run(
        [sys.executable, "-m", "ombre.cli", "memories", "migrate", "--to", url, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    report = js.loads(out.stdout)
    assert report["memories"] == 10_000 and report["gate_log"] == 1 and report["vectors"] == {"e5": 8_000, "use": 8_000}
    assert hashlib.sha256((tmp_path / "ombre" / "ombre.db").read_bytes()).hexdigest() == before
    target = PostgresStore(url)
    source = SQLiteStore(tmp_path / "ombre" / "ombre.db")
    try:
        assert target.meta("distill_cursor:abc") == "123" and target.get("m00003").trace[0]["reason"] == "3"
        for q in ("桂花乌龙", "年糕", "花生过敏", "爬山"):
            a = breath(source, BreathRequest(query=q, max_results=5), encoders={}, touch=False)
            b = breath(target, BreathRequest(query=q, max_results=5), encoders={}, touch=False)
            assert [c.id for c in a.cards] == [c.id for c in b.cards], q
    finally:
        target.close()
        source.close()
    again = subprocess.run(
        [sys.executable, "-m", "ombre.cli", "memories", "migrate", "--to", url],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode != 0 and "already holds memories" in again.stderr


def test_stores_that_began_as_one_copy_join_one_database_under_names_of_their_own(tmp_path, postgres):
    """Two people's SQLite stores, copies of one file (the same memory ids), move into one database one
    after the other: the second is refused under the taken name, lands with --as, and the two stay apart."""
    import os
    import shutil

    from ombre.memory.postgres_store import PostgresStore
    from ombre.memory.sqlite_store import SQLiteStore

    first = tmp_path / "ana" / "ombre.db"
    source = SQLiteStore(first)
    source.add_many([(memory(f"m{i}", text), document(text), None) for i, text in enumerate(CORPUS)])
    source.close()
    (tmp_path / "ben").mkdir()
    shutil.copy(first, tmp_path / "ben" / "ombre.db")
    url = fresh_database(postgres)

    def run(home: str, *extra: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / home)}
        return subprocess.run(
            [sys.executable, "-m", "ombre.cli", "memories", "migrate", "--to", url, *extra],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert run("ana").returncode == 0
    refused = run("ben")
    assert refused.returncode != 0 and "namespace default" in refused.stderr and "--as" in refused.stderr
    landed = run("ben", "--as", "ben")
    assert landed.returncode == 0, landed.stderr
    ana, ben = PostgresStore(url), PostgresStore(url, "ben")
    try:
        assert {m.id for m in ana.list()} == {m.id for m in ben.list()} == {f"m{i}" for i in range(len(CORPUS))}
        changed = ben.get("m0")
        changed.content = "他改口了：更喜欢茉莉花茶"
        ben.update(changed, document(changed.content))
        ben.delete("m1")
        assert ana.get("m0").content == CORPUS[0] and ana.get("m1") is not None and ben.get("m1") is None
        assert [i for i, _ in ana.keyword_search(query_terms("茉莉花茶"), 5)] == []
        assert [i for i, _ in ben.keyword_search(query_terms("茉莉花茶"), 5)] == ["m0"]
    finally:
        ana.close()
        ben.close()


def test_two_services_and_two_cli_loops_on_one_database_keep_every_write_and_the_caps(tmp_path, postgres):
    """Issue #19 item 4: 2 `ombre serve` processes and 2 CLI loops hold at once into one PostgreSQL store;
    every memory lands, the pinned cap holds, and activation counts lose no increment."""
    import os
    import threading

    import httpx

    from ombre.memory.postgres_store import PostgresStore
    from tests.support.servers import OMBRE, Server

    url = fresh_database(postgres)
    extra = {"OMBRE_DB": url, "OMBRE_VECTORS": "0", "OMBRE_MAX_PINNED": "5"}
    servers = [Server(tmp_path / f"serve{i}", env=extra) for i in range(2)]
    errors: list[str] = []

    def content(tag: str, j: int) -> tuple[str, str]:
        return f"{tag}号写手记下：她第{j}次说最喜欢编号{tag}{j}的颜色", f"我最喜欢编号{tag}{j}的颜色"

    def over_http(server: Server, tag: str) -> None:
        for j in range(8):
            text, quote = content(tag, j)
            r = httpx.post(server.url + "/v1/hold", json={"content": text, "quote": quote, "pinned": True}, timeout=60)
            if r.status_code != 200 or not r.json().get("stored"):
                errors.append(f"{tag}{j}: {r.text[:200]}")

    def over_cli(tag: str) -> None:
        env = {
            **os.environ,
            "HOME": str(tmp_path / f"cli{tag}"),
            "OMBRE_HOME": str(tmp_path / f"cli{tag}" / "o"),
            "OMBRE_URL": "http://127.0.0.1:9",
            **extra,
        }
        for j in range(8):
            text, quote = content(tag, j)
            out = subprocess.run(
                OMBRE + ["hold", text, "--quote", quote, "--pinned", "--json"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if out.returncode != 0 or not json_loads(out.stdout).get("stored"):
                errors.append(f"{tag}{j}: {out.stderr[-300:]}")

    try:
        writers = [
            threading.Thread(target=over_http, args=(servers[0], "A")),
            threading.Thread(target=over_http, args=(servers[1], "B")),
            threading.Thread(target=over_cli, args=("C",)),
            threading.Thread(target=over_cli, args=("D",)),
        ]
        for w in writers:
            w.start()
        for w in writers:
            w.join(timeout=600)
        assert not any(w.is_alive() for w in writers), "a writer is stuck (deadlock?)"
    finally:
        for s in servers:
            s.stop()
    assert errors == []
    store = PostgresStore(url)
    try:
        assert store.count(pinned=None) == 32 and store.count(pinned=True) == 5
        mid = store.list(limit=1)[0].id
        before = store.get(mid).activation_count
        script = (
            "import sys; from ombre.memory.postgres_store import PostgresStore; s = PostgresStore(sys.argv[1]); "
            "[s.touch([sys.argv[2]], '2026-12-04T00:00:00+00:00') for _ in range(50)]; s.close()"
        )
        procs = [subprocess.Popen([sys.executable, "-c", script, url, mid]) for _ in range(2)]
        assert all(p.wait(timeout=120) == 0 for p in procs)
        assert store.get(mid).activation_count == before + 100
    finally:
        store.close()


def json_loads(text: str) -> dict:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return {}


def test_namespaces_never_see_each_other(settings):
    """Issue #19 item 2 at the store: two people on one database; every read and write stays in its own."""
    from dataclasses import replace

    ana, ben = open_store(settings), open_store(replace(settings, namespace="ben"))
    try:
        ana.add(memory("a1", "她最喜欢桂花乌龙"), document("她最喜欢桂花乌龙"))
        ben.add(memory("b1", "他最喜欢桂花乌龙拿铁"), document("他最喜欢桂花乌龙拿铁"))
        ana.set_meta("cursor", "ana")
        ben.set_meta("cursor", "ben")
        ana.log_gate(GateEntry("2026-12-04T00:00:00+00:00", "2026-12-04", "auto", "store", [], "x", "a1"))
        assert [m.id for m in ana.list()] == ["a1"] and [m.id for m in ben.list()] == ["b1"]
        assert ana.get("b1") is None and ben.get("a1") is None and ana.get_many(["a1", "b1"]).keys() == {"a1"}
        assert [i for i, _ in ana.keyword_search(query_terms("桂花乌龙"), 5)] == ["a1"]
        assert [i for i, _ in ben.keyword_search(query_terms("桂花乌龙"), 5)] == ["b1"]
        assert (ana.meta("cursor"), ben.meta("cursor")) == ("ana", "ben")
        assert len(ana.gate_log(5)) == 1 and ben.gate_log(5) == []
        intruder = ana.get("a1")
        intruder.content = "被改掉了"
        ben.update(intruder)  # another namespace's id: nothing happens
        ben.delete("a1")
        ben.touch(["a1"], "2099-01-01T00:00:00+00:00")
        kept = ana.get("a1")
        assert kept.content == "她最喜欢桂花乌龙" and kept.activation_count == 0
        assert ana.count() == 1 and ben.count() == 1
    finally:
        ana.close()
        ben.close()


def test_the_hnsw_path_gives_the_exact_top_cards_and_keeps_namespaces_apart(postgres):
    """A namespace past hnsw_from is searched through an HNSW index of its own: on a 2,000-memory store its
    top candidates are the exact search's, their scores exact, and another namespace's memories (the very
    same vectors) never come back. A namespace that grows past it without a load gets its index built in the
    background while recall scores exactly."""
    from ombre.memory.postgres_store import PostgresStore

    rng = np.random.default_rng(5)
    # embeddings lie near a space of few dimensions: 16 here, spread into 384
    vectors = rng.normal(size=(2000, 16)) @ rng.normal(size=(16, 384)) + 0.5 * rng.normal(size=(2000, 384))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    rows = [(memory(f"m{i:04d}", f"第{i}条"), document(f"第{i}条"), {"e5": v}) for i, v in enumerate(vectors)]
    big = PostgresStore(fresh_database(postgres), "big", hnsw_from=1000)
    other = big.beside("other")
    try:
        big.load({"big": (rows, [], {})})
        queries = vectors[rng.integers(0, 2000, 10)] + 0.3 * rng.normal(size=(10, 384)).astype(np.float32)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        exact = PostgresStore(big.url, "big", share=big)
        exact.hnsw_from = 10**9
        found, truth = big.search_vectors("e5", queries, 50, 20), exact.search_vectors("e5", queries, 50, 20)
        assert type(found).__name__ == "_Nearest" and type(truth).__name__ == "ScoredRows"
        for got, want in zip(found.rankings, truth.rankings):
            assert got[:5] == want[:5]
        ids, at = found.at(truth.rankings[0])
        want_ids, want_at = truth.at(ids)
        assert ids == want_ids and np.allclose(at, want_at, atol=1e-6)
        assert np.allclose(found.means, truth.means, atol=1e-6) and np.allclose(found.nearest, truth.nearest, atol=0.02)

        other.add_many(
            [(memory(f"o{i:04d}", f"第{i}条"), document(f"第{i}条"), {"e5": v}) for i, v in enumerate(vectors[:1200])]
        )
        first = other.search_vectors("e5", queries[:1], 50, 20)  # no index yet: exact, and one is started
        assert type(first).__name__ == "ScoredRows"
        deadline = time.monotonic() + 60
        while not other._index_ready("embedding") and time.monotonic() < deadline:
            time.sleep(0.2)
        then = other.search_vectors("e5", queries[:1], 50, 20)
        assert type(then).__name__ == "_Nearest" and then.rankings[0][:5] == first.rankings[0][:5]
        assert all(mid.startswith("o") for mid in then.rankings[0])
        assert all(mid.startswith("m") for r in big.search_vectors("e5", queries, 50, 20).rankings for mid in r)
    finally:
        big.close()
