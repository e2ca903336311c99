"""The dashboard's words: Chinese by default (our users write Chinese), English on request (?lang=en)."""
from __future__ import annotations

ZH = {
    "title": "Ombre 面板", "overview": "总览", "memories": "记忆", "sessions": "会话", "keeper": "Keeper 与健康",
    "bill": "账单", "hooks": "钩子日志", "search": "搜索", "search_hint": "想找什么？（通过 breath 回想）",
    "type": "类型", "status": "状态", "any": "全部", "pinned": "置顶", "archived": "已归档", "unconfirmed": "未确认",
    "confirmed": "已确认", "current": "当前", "why": "为什么匹配", "content": "内容", "importance": "重要度",
    "evidence": "证据", "quote": "原话", "session": "会话", "date": "日期", "trace": "仲裁痕迹", "conflicts": "冲突",
    "replaced_by": "被取代", "edit": "修改", "save": "保存", "pin": "置顶", "unpin": "取消置顶", "archive": "归档",
    "restore": "恢复", "forget": "删除（忘掉）", "forget_confirm": "确定要永久删除这条记忆吗？只有备份能找回。",
    "confirm": "确认", "cancel": "取消", "force": "承诺也归档（对方确实撤回了）", "none": "（无）",
    "origin": "来源", "original_id": "原 id",
    "size": "大小", "used": "上下文", "modified": "最后写入", "anchors": "锚点（最近的用户消息）",
    "range": "圈选范围", "mode": "方式", "forge": "forge（只留近段）", "diet": "diet（压缩工具输出）",
    "retain": "保留最近 tokens", "keep_days": "只留这几天（上海日期，逗号分隔）", "from_idx": "从 idx",
    "to_idx": "到 idx", "preview": "预演（不写文件、不换绑）", "kept": "保留", "events": "事件", "turns": "轮",
    "tokens": "tokens", "after": "换窗后", "before": "换窗前", "new_sid": "新会话 id", "handoff": "交接包（可编辑）",
    "handoff_days": "交接只摘这几天", "run_tunnel": "确认换窗（写交接 → 裁剪 → 停桥 → 换绑 → 启动）",
    "i_confirm": "我确认要换窗", "result": "结果", "rebind": "换绑", "hold": "交接记忆", "nudge": "接续提示",
    "warnings": "提醒", "checks": "检查", "ok": "正常", "fail": "需要处理", "todo": "该做什么",
    "last_runs": "最近的运行", "decision": "决定", "reason": "原因", "error": "错误",
    "plot_pct": "各会话上下文占用（%）",
    "threshold": "阈值", "day": "日期", "requests": "请求", "input": "输入", "cache_creation": "缓存写入",
    "cache_read": "缓存读取", "output": "输出", "hit_ratio": "缓存命中", "cost": "费用（美元，按标价）",
    "swaps": "换窗", "background": "后台模型", "total": "合计",
    "plot_cache": "每次请求的缓存写入与读取（换窗处有竖线）",
    "days": "天数", "event": "事件", "outcome": "结果", "cards": "注入的卡片", "nothing": "没有注入：",
    "health": "记忆服务", "memories_count": "记忆条数", "last_backup": "最近备份", "version": "版本",
    "cooldowns": "冷却", "done": "已完成", "no_token": "需要令牌", "no_token_hint":
    "在地址后加 ?token=你的令牌 打开一次（之后浏览器会记住），或在本机用 127.0.0.1 访问。",
    "lang_other": "English", "lang_other_code": "en", "priced_as": "计价模型", "files": "份记录",
    "waiting_new": "等待 /new", "bound": "桥接绑定",
    "owner_only": "这一页属于这台机器的主人", "owner_only_hint":
    "会话、换窗、keeper、账单和钩子记录只对主人的令牌（或本机不设令牌时）开放；这个令牌只能看它自己的记忆。",
}

EN = {
    "title": "Ombre dashboard", "overview": "Overview", "memories": "Memories", "sessions": "Sessions",
    "keeper": "Keeper & health", "bill": "Bill", "hooks": "Hook log", "search": "Search",
    "search_hint": "What to find? (recalled through breath)", "type": "Type", "status": "Status", "any": "any",
    "pinned": "pinned", "archived": "archived", "unconfirmed": "unconfirmed", "confirmed": "confirmed",
    "current": "current", "why": "why it matched", "content": "Content", "importance": "Importance",
    "evidence": "Evidence", "quote": "Quote", "session": "Session", "date": "Date", "trace": "Arbitration trace",
    "conflicts": "Conflicts", "replaced_by": "Replaced by", "edit": "Edit", "save": "Save", "pin": "Pin",
    "unpin": "Unpin", "archive": "Archive", "restore": "Restore", "forget": "Forget (delete)",
    "forget_confirm": "Delete this memory for good? Only a backup brings it back.", "confirm": "Confirm",
    "cancel": "Cancel", "force": "Archive even a commitment (they withdrew it)", "none": "(none)",
    "origin": "Came from", "original_id": "original id", "size": "Size",
    "used": "Context", "modified": "Last written", "anchors": "Anchors (recent user messages)", "range": "Range",
    "mode": "Mode", "forge": "forge (recent tail)", "diet": "diet (squash tool output)", "retain": "Keep recent tokens",
    "keep_days": "Keep only these days (Shanghai dates, comma-separated)", "from_idx": "From idx", "to_idx": "To idx",
    "preview": "Dry run (writes nothing, re-binds nothing)", "kept": "Kept", "events": "events", "turns": "turns",
    "tokens": "tokens", "after": "after", "before": "before", "new_sid": "New session id",
    "handoff": "Handoff pack (editable)", "handoff_days": "Handoff from these days only",
    "run_tunnel": "Swap windows (handoff → cut → stop bridge → re-bind → start)", "i_confirm": "I confirm the swap",
    "result": "Result", "rebind": "Re-bind", "hold": "Handoff memory", "nudge": "Nudge", "warnings": "Warnings",
    "checks": "Checks", "ok": "ok", "fail": "needs you", "todo": "To do", "last_runs": "Last runs",
    "decision": "Decision", "reason": "Reason", "error": "Error", "plot_pct": "Context used per session (%)",
    "threshold": "threshold", "day": "Day", "requests": "Requests", "input": "Input",
    "cache_creation": "Cache write", "cache_read": "Cache read", "output": "Output", "hit_ratio": "Cache hits",
    "cost": "Cost (USD, list price)", "swaps": "Swaps", "background": "Background model", "total": "Total",
    "plot_cache": "Cache write and read per request (swaps as vertical lines)", "days": "Days", "event": "Event",
    "outcome": "Outcome", "cards": "Cards injected", "nothing": "Nothing injected: ", "health": "Memory service",
    "memories_count": "Memories", "last_backup": "Last backup", "version": "Version", "cooldowns": "Cooldowns",
    "done": "Done", "no_token": "Token required", "no_token_hint":
    "Open it once with ?token=YOUR_TOKEN (the browser keeps it), or from this machine at 127.0.0.1.",
    "lang_other": "中文", "lang_other_code": "zh", "priced_as": "priced as", "files": "files",
    "waiting_new": "Waiting for /new", "bound": "Bridge bound to",
    "owner_only": "This page belongs to the machine's owner", "owner_only_hint":
    "Sessions, swaps, the keeper, the bill and the hook log open with the owner's token (or on a loopback "
    "service without one); this token sees its own memories only.",
}

LANGUAGES = {"zh": ZH, "en": EN}


def words(lang: str | None) -> dict[str, str]:
    return LANGUAGES.get(lang or "zh", ZH)
