"""Generate the lab's fictional data set into data/ (deterministic: same bytes every run).

    python scripts/make_data.py          # write data/
    python scripts/make_data.py --check  # exit 1 if data/ differs from what this script makes

Five invented competitors, each with a market-data export (a CSV of daily rows plus a KPI block)
and a news digest in English and Chinese. Sizes are chosen so that some exports are well over
20,000 tokens and the whole naive run does not fit a 128k window. The needle — one exact KPI in
the first export — is buried in the middle of its file.

Every file says that it is fictional. No real company, person or figure is described.

Two hand-written texts ride along for notebook 13: a skill (``skills/qbr-report/SKILL.md``, the
QBR format of the report, with YAML front matter) and a memory file (``memory/AGENTS.md``, the
user's preferences). They use no random numbers, so adding them changed no other file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from pathlib import Path

SEED = 20261201
WEEK = "2026-W48"
DATA = Path(__file__).resolve().parent.parent / "data"
NOTICE = "FICTIONAL DATA generated for the labkit course (seed {seed}). No real company or figure."

# name, ticker, sector, daily rows in the export (sets its size)
COMPANIES = [
    ("Brightloom", "BRLM", "workflow automation", 830),
    ("Corvid Systems", "CRVD", "observability", 270),
    ("Driftwood Data", "DRFT", "data integration", 1120),
    ("Emberline", "EMBR", "customer analytics", 430),
    ("Fernhollow Labs", "FERN", "AI tooling", 1380),
]
KPIS = ["annual_recurring_revenue_musd", "net_revenue_retention_q1", "net_revenue_retention_q2",
        "net_revenue_retention_q3", "gross_margin_q3", "logo_churn_q3", "sales_cycle_days_q3",
        "headcount_q3"]
NEEDLE = {"ticker": "BRLM", "kpi": "net_revenue_retention_q3", "value": "117.4%"}

EVENTS = [
    ("launches {product} for mid-market teams", "推出面向中型团队的{product}"),
    ("cuts list prices on its {product} plan by {pct}%", "将{product}套餐标价下调{pct}%"),
    ("signs a partnership with a regional cloud provider", "与一家区域云服务商签署合作协议"),
    ("hires a new chief revenue officer", "任命新的首席营收官"),
    ("opens an office in Singapore", "在新加坡开设办公室"),
    ("reports an outage lasting {hours} hours", "发生持续{hours}小时的服务中断"),
    ("announces a {pct}% reduction in staff", "宣布裁员{pct}%"),
    ("publishes a benchmark claiming {pct}% faster queries", "发布基准测试，称查询速度提升{pct}%"),
    ("adds SOC 2 Type II certification", "获得 SOC 2 Type II 认证"),
    ("is rumoured to be raising a new funding round", "据传正在进行新一轮融资"),
]
PRODUCTS = ["Flow", "Pulse", "Atlas", "Relay", "Beacon", "Harbor"]


def export_csv(rng: random.Random, name: str, ticker: str, sector: str, rows: int) -> str:
    lines = [
        f"# Market data export — {name} ({ticker})",
        f"# {NOTICE.format(seed=SEED)}",
        f"# sector: {sector} | week: {WEEK} | daily rows: {rows}",
        "date,ticker,open,high,low,close,volume,web_visits,trial_signups,paid_conversions",
    ]
    price = rng.uniform(20, 80)
    day = dt.date(2026, 11, 27) - dt.timedelta(days=rows)
    kpi_at = rows // 2
    for i in range(rows):
        if i == kpi_at:
            lines.append("# KPI block (quarterly, company-reported)")
            for kpi in KPIS:
                if ticker == NEEDLE["ticker"] and kpi == NEEDLE["kpi"]:
                    value = NEEDLE["value"]
                elif kpi.startswith("net_revenue_retention"):
                    value = f"{rng.uniform(96, 125):.1f}%"
                elif kpi.endswith("_musd"):
                    value = f"{rng.uniform(40, 400):.1f}"
                elif kpi.startswith(("gross_margin", "logo_churn")):
                    value = f"{rng.uniform(2, 80):.1f}%"
                else:
                    value = str(rng.randint(20, 900))
                lines.append(f"kpi,{ticker},{kpi},{value}")
        price *= 1 + rng.gauss(0, 0.018)
        o = price * (1 + rng.gauss(0, 0.006))
        hi, lo = max(o, price) * (1 + abs(rng.gauss(0, 0.01))), min(o, price) * (1 - abs(rng.gauss(0, 0.01)))
        visits = rng.randint(20_000, 90_000)
        trials = rng.randint(150, 900)
        lines.append(
            f"{day.isoformat()},{ticker},{o:.2f},{hi:.2f},{lo:.2f},{price:.2f},"
            f"{rng.randint(200_000, 3_000_000)},{visits},{trials},{rng.randint(5, trials // 4)}"
        )
        day += dt.timedelta(days=1)
    lines.append(f"# end of export — {ticker}")
    return "\n".join(lines) + "\n"


def news(rng: random.Random, name: str, ticker: str) -> tuple[str, str]:
    en = [f"# News digest — {name} ({ticker})", f"_{NOTICE.format(seed=SEED)}_", ""]
    zh = [f"# 新闻摘要（News digest — {name} ({ticker})）", "_虚构数据：为 labkit 课程生成，不涉及任何真实公司或数字。_", ""]
    for k, i in enumerate(rng.sample(range(len(EVENTS)), 6)):
        fill = {"product": rng.choice(PRODUCTS), "pct": rng.randint(5, 40), "hours": rng.randint(2, 14)}
        head_en, head_zh = (t.format(**fill) for t in EVENTS[i])
        date = (dt.date(2026, 11, 23) + dt.timedelta(days=k)).isoformat()
        en += [f"## {date}: {name} {head_en}",
               f"{name} ({ticker}) {head_en}, according to a company statement. Analysts following "
               f"the {WEEK} cycle said the move matters mostly for deals already in the pipeline, "
               "and that customers should expect more detail in the next quarterly update.", ""]
        zh += [f"## {date}：{name}{head_zh}",
               f"据公司声明，{name}（{ticker}）{head_zh}。关注本周（{WEEK}）动态的分析师认为，此举主要影响"
               "已在推进中的交易，客户可在下一次季度更新中获得更多细节。", ""]
    return "\n".join(en), "\n".join(zh)


SPEAKERS = ["Avery (product)", "Bo (sales)", "Chen Li (finance)", "Dana (marketing)", "Eli (support)"]
TOPICS = [
    "{name}'s pricing page changed again this week, and two of our trials mentioned it",
    "the {name} partnership announcement has not shown up in any deal we are working yet",
    "support saw three tickets from customers comparing us with {name} on onboarding time",
    "finance wants the {name} numbers in the report to match the export exactly",
    "marketing would like one slide on {name} for the quarterly business review",
    "we should keep an eye on {name}'s hiring, it tells us where they are going next",
]


def transcript(rng: random.Random, turns: int = 1700) -> str:
    """A long, fictional meeting transcript: the large human message of notebook 05."""
    names = [c[0] for c in COMPANIES]
    lines = ["# Weekly sync — meeting transcript", f"_{NOTICE.format(seed=SEED)}_", ""]
    for i in range(turns):
        minute = f"{9 + i // 600:02d}:{(i // 10) % 60:02d}"
        said = rng.choice(TOPICS).format(name=rng.choice(names))
        lines.append(f"[{minute}] {rng.choice(SPEAKERS)}: I think {said}; let's note it and move on.")
    lines.append("[end of transcript]")
    return "\n".join(lines) + "\n"


# Notebook 13: a skill in the Agent Skills format (front matter first, so the notice is in the
# body) and an AGENTS.md memory (the notice is an HTML comment: deepagents strips those before
# the memory reaches the model). Neither may contain a scenario task's marker.
QBR_SKILL = f"""---
name: qbr-report
description: The QBR (quarterly business review) format of the competitor report, with its required section headings in order. Use it when the user asks for the report in the QBR format.
allowed-tools: read_file write_file
metadata:
  owner: strategy-team
---

# QBR format for the competitor report

_{NOTICE.format(seed=SEED)}_

Once a quarter, leadership reads the competitor report as a QBR. They read the first screen and
skim the rest, so the format is fixed: the same sections, in the same order, every quarter.

## Title

Use the title line `# QBR competitor review — <week>`, with the week of the data.

## Required sections, in this order

- `## Executive summary` — one or two lines: how many competitors were covered, what changed.
- `## Competitor scorecard` — one line per competitor, by name and ticker: whether its market
  data was reviewed, and this week's headline.
- `## Risks and watch items` — one line of risk per competitor.
- `## Asks for leadership` — decisions we need from leadership, or "None this quarter".

## Rules

- Quote figures only from the market-data exports; never estimate one.
- Each competitor appears in the scorecard exactly once, in the order of the request.
- Keep it under two pages: point to the detailed files instead of pasting them.
- Save the report where the user asked for it.

## Example scorecard line

- Example Co (EXCO): market data reviewed; news: opens a new office (2026-01-05)
"""

MEMORY = f"""# Memory

<!-- {NOTICE.format(seed=SEED)} -->

## The user's preferences

- Start every report with a one-line TL;DR.
"""


def build() -> dict[str, str]:
    rng = random.Random(SEED)
    files: dict[str, str] = {}
    meta = []
    for name, ticker, sector, rows in COMPANIES:
        files[f"exports/{ticker}.csv"] = export_csv(rng, name, ticker, sector, rows)
        files[f"news/{ticker}.md"], files[f"news_zh/{ticker}.md"] = news(rng, name, ticker)
        meta.append({"name": name, "ticker": ticker, "sector": sector})
    files["transcripts/weekly-sync.md"] = transcript(rng)
    files["skills/qbr-report/SKILL.md"] = QBR_SKILL
    files["memory/AGENTS.md"] = MEMORY
    files["companies.json"] = json.dumps(
        {"notice": NOTICE.format(seed=SEED), "week": WEEK, "companies": meta, "needle": NEEDLE},
        indent=2, ensure_ascii=False) + "\n"
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    files = build()
    if args.check:
        stale = [p for p, text in files.items()
                 if not (DATA / p).exists() or (DATA / p).read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"data/{p} differs from the generator's output", file=sys.stderr)
        return 1 if stale else 0
    for p, text in files.items():
        (DATA / p).parent.mkdir(parents=True, exist_ok=True)
        (DATA / p).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files under {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
